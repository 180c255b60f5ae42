"""Reading the store's files: a file that is missing, cut short, corrupt or not the JSON it should be is an
error that names it (`UnreadableFile`), never a bare decoder traceback."""
from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path


class EvidenceError(Exception):
    """A problem with the evidence store that the caller must see by name."""


class UnreadableFile(EvidenceError):
    """A file of the store that does not decode; the message names the file."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = Path(path), reason


def read_bytes(path: Path) -> bytes:
    """A file's bytes, decompressed where its name ends in .gz; a missing, cut-short or corrupt file is
    UnreadableFile."""
    path = Path(path)
    try:
        data = path.read_bytes()
        return gzip.decompress(data) if path.suffix == ".gz" else data
    except FileNotFoundError:
        raise UnreadableFile(path, "missing") from None
    except EOFError:
        raise UnreadableFile(path, "cut short (the gzip stream ends before its end marker)") from None
    except (OSError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
        raise UnreadableFile(path, f"unreadable ({type(error).__name__}: {error})") from None


def read_text(path: Path) -> str:
    try:
        return read_bytes(path).decode()
    except UnicodeDecodeError as error:
        raise UnreadableFile(path, f"not UTF-8 text ({error})") from None


def read_json(path: Path):
    """A JSON file of the store; one that does not parse is UnreadableFile."""
    try:
        return json.loads(read_text(path))
    except ValueError as error:
        raise UnreadableFile(path, f"not valid JSON ({error})") from None


def read_jsonl(path: Path) -> list[dict]:
    """JSON lines, one object a line (`.gz`: compressed); one that does not parse is UnreadableFile."""
    text = read_text(path)
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as error:
        raise UnreadableFile(path, f"not JSON lines ({error})") from None


def unreadable(path: Path) -> str | None:
    """Why a run's file does not decode (None where it does): gzip that is cut short or corrupt, JSON or JSON
    lines that do not parse. A manifest proves the bytes are the ones sealed; this, that they can be read."""
    path = Path(path)
    inner = path.with_suffix("") if path.suffix == ".gz" else path
    reader = {".json": read_json, ".ipynb": read_json, ".jsonl": read_jsonl}.get(inner.suffix)
    if reader is None and path.suffix != ".gz":
        return None  # other formats (npz, text, binaries) are read by their own chapter's code
    try:
        (reader or read_bytes)(path)
    except UnreadableFile as error:
        return error.reason
    return None
