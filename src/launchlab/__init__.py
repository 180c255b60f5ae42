"""launchlab: the harness behind the book "Kernel boundaries on Hopper".

Data flows one way: kernels -> launches -> samples -> saved run -> analysis ->
figures and tables -> page. Importing the package needs no GPU.
"""
__version__ = "0.1.0"
