"""compute-sanitizer memcheck and racecheck over every Example A and B variant (launchlab.gpu.sanitizer).

    python3 tools/sanitize_examples.py [--example pointwise|jobs] [--out summary.json]

Prints (and with --out writes) {example: launchlab.gpu.sanitizer.sanitize(<the example's child module>)}: per tool the
command, exit status, error count from the sanitizer's summary line, the child run's exact checks and
the last lines of its output. The chapters' runs store the same results under sanitizer/. Exit status
0 only when every tool ran clean on every example asked for.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from launchlab.gpu import sanitizer  # noqa: E402

CHILDREN = {"pointwise": "launchlab.chapters.example_a_pointwise.sanitize", "jobs": "launchlab.chapters.example_b_jobs.sanitize"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", choices=tuple(CHILDREN), action="append",
                        help="pointwise (Example A) or jobs (Example B); both when not given")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per tool and example")
    parser.add_argument("--out", type=Path, help="also write the JSON summary here")
    args = parser.parse_args(argv)
    summary = {example: sanitizer.sanitize(CHILDREN[example], timeout_s=args.timeout)
               for example in args.example or CHILDREN}
    text = json.dumps(summary, indent=1, sort_keys=True)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if all(result["clean"] for result in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
