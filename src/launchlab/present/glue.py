"""What every chapter page shares: glued values (a missing one fails the build), the run's
environment, and the validation summary."""
from __future__ import annotations


class MissingPageValue(KeyError):
    """A page asked for a value its run does not hold; the build fails rather than print a blank."""


def glue_values(values: dict) -> None:
    """Glue each value as Markdown, for `{glue:md}` in the chapter's prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    for name, text in values.items():
        if text is None or (isinstance(text, str) and not text.strip()):
            raise MissingPageValue(f"page value {name!r} is missing")
        glue(name, Markdown(str(text)), display=False)


def cuda_version(number) -> str:
    """CUDA's integer version (1000 × major + 10 × minor, e.g. 13020) as `13.2`."""
    if not isinstance(number, int):
        return "not recorded"
    return f"{number // 1000}.{number % 1000 // 10}"


def _clocks(state: dict | None) -> str:
    smi = (state or {}).get("smi") or {}
    if "clocks.sm" not in smi:
        return "not read"
    return f"SM {smi['clocks.sm']} MHz, memory {smi.get('clocks.mem', '?')} MHz, {smi.get('temperature.gpu', '?')} °C, {smi.get('power.draw', '?')} W"


def environment_rows(run) -> list[tuple[str, str]]:
    """(what, value) pairs describing the GPU, software, host and clocks of a run."""
    record, device, env = run.record, run.record.device, run.record.environment
    measured = [v for k, v in record.states.items() if k.startswith("measurement")]
    libraries = ", ".join(f"{name} {version}" for name, version in sorted(env.get("libraries", {}).items()) if version)
    dropped = {True: "yes: the run is flagged", False: "no", None: "not known"}[record.clocks_dropped]
    return [
        ("run", run.run_id),
        ("GPU", f"{device['name']} (compute capability {device['compute_capability']}, {device['sm_count']} SMs, "
                f"{device['l2_bytes'] / 2**20:.0f} MiB L2)"),
        ("driver", f"{env.get('driver')} (supports CUDA {cuda_version(env.get('driver_api_version'))})"),
        ("CUDA runtime", cuda_version(env.get("cuda_runtime_version"))),
        ("CuPy / NumPy / Python", f"{env.get('cupy')} / {env.get('numpy')} / {env.get('python')}"),
        ("libraries", libraries or "none used"),
        ("host CPU", f"{env.get('cpu_model')} ({env.get('cpu_count')} logical CPUs)"),
        ("host path measured", record.host_path),
        ("clocks before timing", _clocks(measured[0] if measured else None)),
        ("clocks after timing", _clocks(measured[-1] if measured else None)),
        ("SM clock dropped during timing", dropped),
        ("code", f"git {record.git_commit}, source tree SHA-256 {record.source_tree_sha256[:16]} (first 16 hex digits)"),
    ]


def environment_table(run):
    """The run behind a page: GPU, software, host, clocks and code, as a two-column table."""
    from launchlab.present import tables

    return tables.page_table([{"what": what, "value": value} for what, value in environment_rows(run)],
                             index="what", formats={"value": "text"}, headers={"what": "", "value": ""})


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float) -> str:
    """A small or large number as `1.6 × 10⁻⁶` (never the `1.6e-06` of scientific notation)."""
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"


def validation_summary(run):
    """Checks per phase: how many, how many passed, and the largest error of the tolerance checks."""
    from launchlab.present import tables

    rows = {}
    for check in run.json("validation.json"):
        row = rows.setdefault(check["phase"], {"phase": check["phase"], "checks": 0, "passed": 0, "exact": 0,
                                                "largest": None})
        row["checks"] += 1
        row["passed"] += int(bool(check["passed"]))
        row["exact"] += int(bool(check.get("exact")))
        error = check.get("max_abs_error")
        if error is not None:
            row["largest"] = error if row["largest"] is None else max(row["largest"], error)
    table = [{"phase": r["phase"], "checks": r["checks"], "passed": r["passed"], "bit-exact checks": r["exact"],
              "largest |error| against the oracle": "exact comparison only" if r["largest"] is None
              else power_of_ten(r["largest"])}
             for r in rows.values()]
    return tables.page_table(table, index="phase", formats={"largest |error| against the oracle": "text"},
                             headers={"largest |error| against the oracle": "Largest |error| against the oracle"},
                             note="Each check compares one output with the float64 (or bit-exact) oracle; "
                                  "outputs are poisoned before every checked invocation.")
