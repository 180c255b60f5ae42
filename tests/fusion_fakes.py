"""What the fusion chapter's CPU tests share: typed parameters, fake samples, Nsight Compute output, a SYNTHETIC run
of every declared variant (fake samples written through RunWriter and RunRecord), and fake GPU modules on which
run.py runs end to end."""
from pathlib import Path

import numpy as np

from launchlab.analysis import recompute
from launchlab.chapters import fusion
from launchlab.chapters.fusion import plans
from launchlab.gpu import ncu
from launchlab.chapters.fusion import profile
from launchlab.measure.protocol import FROZEN
from launchlab.model import fused_cost, fused_policy, oracles, workloads
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.record import RunRecord

REPO_ROOT = Path(__file__).resolve().parents[1]
H200_SHARED_OPTIN = 232448  # 227 KiB opt-in shared memory per block
H200 = {"name": "Synthetic GPU", "compute_capability": "9.0", "sm_count": 132, "l2_bytes": 62914560,
        "shared_bytes_per_block_optin": H200_SHARED_OPTIN}


# ---------------------------------------------------------------- parameters as a notebook or run.json gives them
def typed(**given) -> fusion.Parameters:
    """Parameters as a notebook or run.json gives them (text), parsed by the declaration."""
    return fusion.CHAPTER.parse_parameters(given)


# ---------------------------------------------------------------- the launch policy's pick at a shape
def assert_policy_pick(plan: dict, rows: int, cols: int, device: dict) -> None:
    """The launch policy's contract: the plan is a candidate of least score; where others tie with it, none has a
    smaller latency bound, and none that comes before it an equal one; it carries every candidate's prediction by
    tag and the model's version, and its module builds the kernels it names."""
    predicted = plans.predictions(rows, cols, device)
    scores = [plans.score(times) for _, times in predicted]
    tags = [candidate["tag"] for candidate, _ in predicted]
    chosen = tags.index(plan["tag"])
    assert {k: v for k, v in plan.items() if k not in ("predicted_us", "model")} == predicted[chosen][0], (rows, cols)
    assert plan["predicted_us"] == {candidate["tag"]: times for candidate, times in predicted}
    assert plan["model"] == fused_cost.MODEL_VERSION
    assert scores[chosen] <= min(scores) * (1 + 1e-9)

    def bound(k):
        return plans.score({l2: fused_cost.predict_terms(predicted[k][0], rows, cols, device, l2, fused_cost.FITTED)
                            ["latency_bound"] for l2 in fused_cost.L2_STATES})

    for k, each in enumerate(scores):
        if k != chosen and each <= min(scores) * (1 + 1e-9):
            assert bound(k) > bound(chosen) or (bound(k) == bound(chosen) and k > chosen), (rows, cols, tags[k])
    row_builds = ("fused_softmax", plans.REGISTERS_FAMILY)  # the full row kernel, or its registers tier alone
    assert plan["family"] in (row_builds if plan["design"] == "row" else (fused_policy.FAMILY,))
    assert len(plans.plan_kernels(plan)) == 2


# ---------------------------------------------------------------- one sample as the protocol records it
def sample(measurement, round_index, variant, count, event_us_per_invocation=None, enqueue_us=1.0):
    event_ms = None if event_us_per_invocation is None else count * event_us_per_invocation / 1e3
    total_ns = int(count * (event_us_per_invocation or enqueue_us) * 1e3) + 1000
    return {"measurement": measurement, "round": round_index, "position": 0, "variant": str(variant), "count": count,
            "launches": 1, "enqueue_ns": int(count * enqueue_us * 1e3), "complete_ns": total_ns, "event_ms": event_ms}


# ---------------------------------------------------------------- Nsight Compute output
NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
              '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def ncu_lines(kernel_id: int, kernel: str, read: str, write: str, unit: str = "byte", read_unit: str | None = None):
    prefix = (f'"{kernel_id}","1234","python3","127.0.0.1","{kernel}","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0",'
              '"Command line profiler metrics"')
    return [f'{prefix},"dram__bytes_read.sum","{read_unit or unit}","{read}"',
            f'{prefix},"dram__bytes_write.sum","{unit}","{write}"']


# As chapters/fusion/profile.py's child launches the default profile rows: the fixture's kernel (before the first marker), then the copy, the row
# path, fused RMS, fused plain and cuDNN, each followed by the marker (empty_kernel). Here fused plain launched
# nothing and a stray kernel follows the last marker.
NCU_KERNELS = [
    (0, "normal_float32", "1,000", "67108864"),                        # drawing the input: before the first marker
    (1, "empty_kernel", "0", "0"),
    (2, "copy_kernel", "67108864", "67108864"),                        # copy
    (3, "empty_kernel", "0", "0"),
    (4, "row_rms", "67,108,864", "1,024"), (5, "row_max", "67108864", "0"),
    (6, "row_exp_sum", "67.108864", "67108864"), (7, "row_scale", "67108864", "67108864"),   # row4
    (8, "empty_kernel", "0", "0"),
    (9, "narrow_rms_softmax", "67108864", "60000000"),                  # fused RMS (any design's kernel)
    (10, "empty_kernel", "0", "0"),
    (11, "empty_kernel", "0", "0"),                                     # fused plain: nothing between the markers
    (12, "void cudnn::softmax_fw_kernel<float>(int, float *)", "67108864", "33554432"),
    (13, "void cudnn::softmax_fw_kernel<float>(int, float *)", "33554432", "33554432"),  # cuDNN: two kernels
    (14, "empty_kernel", "0", "0"),
    (15, "stray_kernel", "5", "5"),                                     # after the last marker: no variant's
]


NCU_CSV = "\n".join(["==PROF== Connected to process 1234", NCU_HEADER]
                    + [line for kernel_id, kernel, read, write in NCU_KERNELS
                       for line in ncu_lines(kernel_id, kernel, read, write,
                                             read_unit="Mbyte" if kernel == "row_exp_sum" else None)]
                    + ["==PROF== Disconnected from process 1234", ""])


# ---------------------------------------------------------------- a synthetic run of every declared variant
# Device time per call (µs) at 4096x4096; other shapes scale by their elements. torch is declared but absent
# (but in `every_library_run`).
DEVICE_US = {"copy": 30.0, "copy4": 29.0, "row4": 100.0, "fused_rms": 33.0, "fused_plain": 32.0, "cudnn": 48.0, "triton": 36.0,
             "torch": 40.0}  # torch: in the run with every library


HOST_US = {"row4": 16.0}  # host enqueue per stream call; 4 µs for the others


ABSENT = "torch"


# The chapter's fixed shapes with a small sweep (sweep-only points 4096x256, 4096x768, 128x4096 and 128x262144;
# 4096x512, 4096x1024 and 128x65536 are fixed shapes on its grid).
SYNTHETIC_PARAMETERS = typed(sweep_4096="2:8:2", sweep_128="4096,65536,262144", plane_points=8)


SANITIZER_CHECKS = 44


def per_call_us(name: str, shape: str) -> float:
    rows, cols = workloads.parse_shapes(shape)[0]
    return DEVICE_US[name] * max(0.05, rows * cols / 4096**2)


def synthetic_samples(parameters, warm_us=per_call_us, cold_us=None, absent=ABSENT) -> list[dict]:
    """Samples of every declared variant (but the absent library's) as run.py and sweep.py take them: at a fixed
    shape every variant warm, stream and one-call graph variants cold too; at a sweep point its graph<k> warm
    and its stream variant cold. warm_us(name, shape): device time per call; cold: 1.5 times that by default.
    The `absent` library (None: none) has no samples."""
    cold_us = cold_us or (lambda name, shape: 1.5 * warm_us(name, shape))
    samples = []
    for spec in fusion.CHAPTER.variants(parameters):
        vid = spec.id
        if vid.target == absent:
            continue
        calls = fusion.calls_per_invocation(vid)
        count = FROZEN.large_batch if fusion.large(vid) else FROZEN.batch
        enqueue = 3.0 if calls > 1 else HOST_US.get(vid.target, 4.0)
        warm, cold = "warm" in spec.l2_states, "cold" in spec.l2_states
        for r in range(FROZEN.rounds):
            wobble = 1 + 0.01 * ((r * 7) % 5)
            device = calls * warm_us(vid.target, vid.case) * wobble
            stream_event = max(device, enqueue)  # a stream batch runs at the slower of host and GPU
            event = device if calls > 1 else stream_event
            if warm:
                samples.append(sample("warm_single", r, vid, 1, None, enqueue) | {"complete_ns": int((event + 9) * 1e3)})
                samples.append(sample("warm_batch", r, vid, count, event, enqueue))
            if cold:
                samples += [sample("cold", r, vid, 1, cold_us(vid.target, vid.case) * wobble, enqueue)
                            for _ in range(FROZEN.cold_repeats)]
    return samples


def sanitizer_result(tool: str, errors: int) -> dict:
    """sanitizer/<tool>.json as gpu/sanitizer.record writes it."""
    return {"tool": tool, "example": "fusion", "command": ["compute-sanitizer", "--tool", tool], "exit_code": 0,
            "errors": errors, "inner": {"passed": True, "checks": {f"case{i}": True for i in range(SANITIZER_CHECKS)}},
            "tail": [], "error": None}


def write_synthetic_run(root: Path, run_id: str = "20990101T000000Z-ch03", parameters=None,
                        sanitizer: dict | None = None, absent: str | None = ABSENT) -> Path:
    """A run of `parameters` (SYNTHETIC_PARAMETERS by default) with made-up timings, Nsight Compute bytes at 4096x4096
    (and an error at 128x65536), compute-sanitizer results {tool: errors} (default: memcheck clean, racecheck
    with 2 errors; {} for none: no sanitizer/ directory) and one library `absent` (torch; None: none)."""
    parameters = parameters or SYNTHETIC_PARAMETERS
    sanitizer = {"memcheck": 0, "racecheck": 2} if sanitizer is None else sanitizer
    writer = evidence.RunWriter(run_id, root)
    plans = fusion.fused_plans(parameters, H200)
    shapes = [workloads.shape_name(*shape) for shape in parameters.shapes]
    libraries = {name: {"requested": True, "unavailable": {}, "setup": {}} for name in fusion.requested_libraries(parameters)}
    if "cudnn" in libraries:
        libraries["cudnn"]["setup"] = {shape: {"cudnn_version": 91002, "call": "cudnnSoftmaxForward"} for shape in plans}
    if "triton" in libraries:
        libraries["triton"]["setup"] = {shape: {"kernel": "softmax_row_resident" if shape != "128x65536" else
                                                "softmax_row_looped"} for shape in plans}
    if absent in libraries:
        libraries[absent]["unavailable"] = {shape: f"{absent} cannot be imported" for shape in plans}
    details = {"fused_plans": plans, "baselines": libraries, "calls_per_graph": 32,
               "cold_l2": {"flush_bytes": 2 * 62914560, "wait_ns": FROZEN.cold_wait_ns}}
    if sanitizer:
        details["sanitizer"] = {"executable": "compute-sanitizer", "clean": not any(sanitizer.values()), "error": None,
                                "tools": list(sanitizer), "problem": "every fused design (synthetic)"}
    record = RunRecord(chapter="fusion", run_id=run_id, parameters=fusion.CHAPTER.recorded_parameters(parameters),
                       protocol=FROZEN.record(), host_path=fusion.CHAPTER.host_path, device=dict(H200),
                       environment={"driver": "0", "libraries": {"cudnn": "9.10.2"}}, git_commit="0" * 40,
                       source_tree_sha256="0" * 64, states={},
                       validation={"verdict": "passed", "checks": 2 * len(shapes)}, details=details)
    writer.write_jsonl(SAMPLES_FILE, synthetic_samples(parameters, absent=absent))
    builds = {plan["module"]: fusion.plan_kernels(plan) for plan in plans.values()} | {"row_softmax": fusion.ROW_KERNELS}
    for label, kernels in builds.items():
        writer.write_json(f"builds/{label}/record.json", {
            "resources_loaded": {k: {"registers": 40, "shared_bytes": 128, "local_bytes": 0} for k in kernels},
            "nvcc": {"resources": {k: {"spill_stores": 0, "spill_loads": 0, "stack_bytes": 0} for k in kernels}}})
    writer.write_json("graphs/setup.json", {
        str(spec.id): {"capture_us": 10.0, "end_capture_us": 20.0, "instantiate_us": 0.0, "upload_us": 5.0,
                       "first_replay_us": 40.0, "instantiated_in_end_capture": True,
                       "calls": fusion.calls_per_invocation(spec.id), "nodes": fusion.calls_per_invocation(spec.id)}
        for spec in fusion.CHAPTER.variants(parameters) if spec.id.submission != "stream" and spec.id.target != absent})
    writer.write_text("profiles/ncu_4096x4096.csv", NCU_CSV)
    writer.write_json("profiles/ncu_4096x4096.json", {"command": ["ncu"], "returncode": 0, "error": None})
    writer.write_text("profiles/ncu_128x65536.csv", "")
    writer.write_json("profiles/ncu_128x65536.json", {
        "command": ["ncu"], "returncode": 1, "error": "ncu exited with status 1 and no counter values: ERR_NVGPUCTRPERM"})
    for tool, errors in sanitizer.items():
        writer.write_json(f"sanitizer/{tool}.json", sanitizer_result(tool, errors))
    writer.write_json("validation.json", [
        {"phase": phase, "variant": f"fused_rms.{shape}.stream", "fixture": fixture, "passed": True,
         "failing_elements": 0, "max_abs_error": 1e-8, "relative_l2_error": 1e-7}
        for shape in shapes for phase, fixture in (("before", 0), ("after", 3))])
    writer.write_json("run.json", record.to_dict())
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    return writer.path


# ---------------------------------------------------------------- fake GPU modules: run.py end to end on the CPU
class FakeGPU:
    """A device clock that fake invocations advance: event intervals are what the fakes 'ran'."""
    ns = 0
    launches = 0

    @classmethod
    def run(cls, nbytes: int) -> None:
        cls.ns += 2000 + nbytes // 3000  # a launch, then about 3 TB/s
        cls.launches += 1


class FakeTarget:
    name, launches = "fake", ()
    submissions = 1

    def __init__(self, x, function, bytes_per_element=8, name="fake"):
        self.x, self.y, self.function, self.name = x, np.empty_like(x), function, name
        self.nbytes = bytes_per_element * x.size

    def invoke(self):
        self.y[...] = self.function(self.x)
        FakeGPU.run(self.nbytes)

    def poison(self):
        self.y.fill(np.nan)

    def load(self, x):
        self.x[...] = x

    def output(self):
        return self.y.copy()

    def device_output(self):
        return self.y

    def compute(self, x, invoke=None):
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        return self.output()


class FakeWrapper(FakeTarget):
    """A graph or a repetition of a target: its buffers, its own invocation."""

    def load(self, x):
        self.target.load(x)

    def poison(self):
        self.target.poison()

    def output(self):
        return self.target.output()

    def device_output(self):
        return self.target.device_output()

    def compute(self, x, invoke=None):
        return self.target.compute(x, invoke or self.invoke)


def numpy_as_cupy():
    """An array module with NumPy's functions and CuPy's memory pool: what the chapter asks of CuPy, on the CPU."""
    import types

    fake = types.ModuleType("cupy")
    fake.__dict__.update({name: getattr(np, name) for name in dir(np) if not name.startswith("__")})
    fake.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    return fake


def fake_gpu_modules(monkeypatch, broken_library="triton") -> dict:
    """Stand-ins for gpu.targets, gpu.fused_designs, gpu.capture, gpu.instruments, the chapter's baselines, CuPy
    (NumPy), the sweep's device fixtures (the host's), Nsight Compute's and compute-sanitizer's subprocesses.
    Returns what the fakes were asked: {"designs": [(design, rows, cols, mode, module)], "ncu": [(rows, cols, plan,
    rows profiled)], "sanitizer": [(example, tools)]}."""
    import sys
    import types

    import launchlab.gpu
    from launchlab.chapters.fusion import copy_kernel, sweep
    from launchlab.gpu import sanitizer

    asked = {"designs": [], "ncu": [], "sanitizer": []}

    def as_float32(function):
        return lambda x: function(x).astype(np.float32)

    targets = types.ModuleType("launchlab.gpu.targets")
    targets.RowPath = lambda built, rows, cols, x: FakeTarget(x, as_float32(oracles.rms_softmax), 24, "row4")
    targets.FusedRow = lambda built, rows, cols, mode, shared, x: FakeTarget(
        x, as_float32(oracles.rms_softmax if mode == "rms" else oracles.softmax), 8, f"fused_{mode}")
    targets.RegistersRow = targets.FusedRow  # the row kernel's registers tier alone: the same target, another build
    targets.DeviceCopy = lambda x: FakeTarget(x, lambda v: v.copy(), 8, "copy")
    fused_designs = types.ModuleType("launchlab.gpu.fused_designs")

    def make_target(design, built, rows, cols, mode="rms", x=None, **options):
        asked["designs"].append((design, rows, cols, mode, built))
        return FakeTarget(x, as_float32(oracles.rms_softmax if mode == "rms" else oracles.softmax), 8, f"{design}_{mode}")

    fused_designs.make_target = make_target

    class Repeated(FakeWrapper):  # as gpu.targets.Repeated: `calls` calls of a target as one invocation, on its buffers
        def __init__(self, target, calls):
            self.target, self.calls, self.name = target, calls, target.name

        def invoke(self):
            for _ in range(self.calls):
                self.target.invoke()

    targets.Repeated = Repeated

    class GraphReplay(FakeWrapper):
        def __init__(self, target, stream):
            self.target, self.name = target, target.name
            before = FakeGPU.launches
            target.invoke()
            nodes = FakeGPU.launches - before
            self.dot = "digraph G {\n" + "".join(f'"n{i}" [label="k"];\n' for i in range(nodes)) + "}\n"
            self.setup = {"capture_us": 1.0, "end_capture_us": 1.0, "instantiate_us": 1.0, "upload_us": 1.0,
                          "first_replay_us": 1.0, "instantiated_in_end_capture": True}

        def invoke(self):
            self.target.invoke()

    capture = types.ModuleType("launchlab.gpu.capture")
    capture.GraphReplay = GraphReplay
    instruments = types.ModuleType("launchlab.gpu.instruments")
    instruments.KERNELS = ("l2_flush_read", "gpu_wait")

    class ColdL2:
        def __init__(self, built, l2_bytes, sm_count, wait_ns):
            self.wait_ns = wait_ns

        def flush(self):
            FakeGPU.ns += self.wait_ns

        def describe(self):
            return {"wait_ns": self.wait_ns}

    instruments.ColdL2 = ColdL2
    baselines = types.ModuleType("launchlab.chapters.fusion.baselines")

    def make_baseline(name, x, stream):
        if name == "torch":
            return None, "PyTorch cannot be imported (fake)"
        wrong = (lambda v: np.full_like(v, 0.5)) if name == broken_library else as_float32(oracles.softmax)
        target = FakeTarget(x, wrong, 8, name)
        target.version, target.describe = (lambda: "1.0"), (lambda: {"call": f"{name} (fake)"})
        return target, None

    baselines.make_baseline = make_baseline
    for name, module in (("targets", targets), ("fused_designs", fused_designs), ("capture", capture),
                         ("instruments", instruments)):
        monkeypatch.setitem(sys.modules, f"launchlab.gpu.{name}", module)
        monkeypatch.setattr(launchlab.gpu, name, module, raising=False)  # `from launchlab.gpu import name` too
    monkeypatch.setitem(sys.modules, "launchlab.chapters.fusion.baselines", baselines)
    monkeypatch.setattr(fusion, "baselines", baselines, raising=False)
    monkeypatch.setitem(sys.modules, "cupy", numpy_as_cupy())
    monkeypatch.setattr(sweep, "device_fixture", workloads.rms_softmax_fixture)
    monkeypatch.setattr(copy_kernel, "make", lambda built, x: FakeTarget(x, lambda v: v.copy(), 8, "copy4"))

    def dram_bytes(rows, cols, plan, names):
        asked["ncu"].append((rows, cols, plan, list(names)))
        return {"command": ["ncu"], "returncode": 0, "csv": NCU_CSV, "error": None, "order": list(names)}

    def sanitize(example, tools=sanitizer.TOOLS, timeout_s=300, environment=None):
        asked["sanitizer"].append((example, tuple(tools)))
        results = [sanitizer_result(tool, 0) for tool in tools]
        return {"sanitizer": "/fake/compute-sanitizer", "error": None, "tools": results, "clean": True}

    monkeypatch.setattr(profile, "dram_bytes", dram_bytes)
    monkeypatch.setattr(sanitizer, "sanitize", sanitize)
    return asked


def fake_session(writer, parameters):
    """The runner's Session with the GPU parts replaced: a fake backend and device, builds that compile nothing."""
    from types import SimpleNamespace

    from launchlab import runner
    from launchlab.measure.protocol import MeasurementProtocol

    class Backend:
        stream = SimpleNamespace(ptr=1, synchronize=lambda: None)
        host = 0

        def host_ns(self):
            Backend.host += 500
            return Backend.host

        def synchronize(self):
            pass

        def record_event(self):
            return FakeGPU.ns

        def wait_event(self, event):
            pass

        def elapsed_ms(self, start, end):
            return (end - start) / 1e6

    class Device:
        """The device side the runner reads: identity, environment, state."""
        identity = staticmethod(lambda: {"name": "Fake GPU", "sm_count": 132, "l2_bytes": 62914560,
                                         "compute_capability": "9.0", "shared_bytes_per_block_optin": H200_SHARED_OPTIN})
        environment = staticmethod(lambda: {"libraries": {}})
        state = staticmethod(lambda: {})

    class Session(runner.Session):
        def build(self, label, family, kernels, defines=None, **options):
            self.builds[label] = {"resources_loaded": {k: {"registers": 32, "shared_bytes": 0, "local_bytes": 0}
                                                       for k in kernels}}
            self.writer.write_json(f"builds/{label}/record.json", self.builds[label])
            return SimpleNamespace(family=family, defines=defines)

    protocol = MeasurementProtocol(warmups=1, rounds=4, batch=4, large_batch=2, cold_repeats=2)
    session = Session(fusion.CHAPTER, writer, parameters, protocol, backend=Backend(), device=Device())
    session.record.git_commit = None
    return session


# Small fixed shapes (a narrow design and the row kernel), a profile at one of them, two sweep points of 128 rows and
# a plane of FAKE_PLANE_POINTS points drawn below FAKE_PLANE_BYTES (small_plane).
FAKE_RUN = {"shapes": "64x128,16x1001", "profile_shapes": "64x128", "sweep_4096": "", "sweep_128": "7,100",
            "sanitizer_tools": "memcheck", "plane_points": 3}


FAKE_PLANE_BYTES = 64 << 10


def small_plane(monkeypatch, most_bytes: int = FAKE_PLANE_BYTES) -> None:
    """The plane's draws kept below `most_bytes` a matrix, so that the fakes' host arrays stay small."""
    from launchlab.chapters.fusion import plane

    monkeypatch.setattr(plane, "PLANE_MAX_BYTES", most_bytes)


def run_on_fakes(tmp_path, monkeypatch):
    """run.run(session) on the fakes through the real Session; (session, writer, asked, summaries, headline)."""
    from launchlab.chapters.fusion import run as chapter_run

    asked = fake_gpu_modules(monkeypatch)
    small_plane(monkeypatch)
    writer = evidence.RunWriter("20990101T000000Z-fake", tmp_path)
    session = fake_session(writer, typed(**FAKE_RUN))
    chapter_run.run(session)
    session.finish()
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    return session, writer, asked, summaries, headline
