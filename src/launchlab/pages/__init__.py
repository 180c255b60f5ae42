"""Pages of the book that read several chapters' runs at once (the conclusion); they sit above the chapters."""
