"""Model files and training checkpoints.

* **Model weights** (what ``policy=`` accepts and what ships under ``src/dgsr/weights/``): one
  safetensors file; its metadata holds the :class:`~dgsr.model.ModelConfig` as JSON
  (``dgsr_config``), a format tag, free-form training facts, and ``dgsr_sha256``, the SHA-256 of
  the tensors (names, dtypes, shapes and bytes in name order) checked on every load. A file-level
  checksum beside the file (``<name>.sha256``, as ``sha256sum`` writes it) is checked too when
  present. Missing, truncated or altered files raise :class:`CheckpointError` (or
  ``FileNotFoundError``) with a message that names the file.
* **Training checkpoints** (``training/ckpt/``, never shipped): model + optimizer + scheduler +
  RNG states + step, written atomically (temporary file + rename) so an interrupted write never
  leaves a broken checkpoint, and a resumed run continues at the same step with the same state.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .model import ModelConfig, PolicyModel

FORMAT = "dgsr-policy-1"


class CheckpointError(ValueError):
    """A model or training checkpoint file that exists but cannot be used."""


def tensors_sha256(tensors: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the tensors' names, dtypes, shapes and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a model file is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_model(model: PolicyModel, path: str | os.PathLike, *, info: dict[str, Any] | None = None,
               write_sha256_file: bool = False) -> str:
    """Write ``model`` as safetensors with its config in the metadata; returns the tensor SHA-256.

    ``info`` (JSON-serialisable training facts: steps, data, metrics) goes into the metadata as
    ``dgsr_info``. ``write_sha256_file`` also writes ``<path>.sha256`` with the file's checksum.
    """
    path = Path(path)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    digest = tensors_sha256(tensors)
    metadata = {"format": FORMAT, "dgsr_config": json.dumps(model.config.to_dict()),
                "dgsr_sha256": digest, "dgsr_info": json.dumps(info or {})}
    _atomic(path, lambda tmp: save_file(tensors, tmp, metadata=metadata))
    if write_sha256_file:
        line = f"{file_sha256(path)}  {path.name}\n"
        _atomic(Path(f"{path}.sha256"), lambda tmp: Path(tmp).write_text(line))
    return digest


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The safetensors metadata of a model file (raises like :func:`load_model`)."""
    from safetensors import safe_open

    path = _existing(path)
    try:
        with safe_open(str(path), framework="pt") as fh:
            return dict(fh.metadata() or {})
    except (SafetensorError, OSError, ValueError) as err:
        raise CheckpointError(f"{path} is not a readable safetensors file ({err})") from err


def load_model(path: str | os.PathLike, *, device: str | torch.device = "cpu") -> tuple[PolicyModel, dict]:
    """Load a model file written by :func:`save_model`; returns ``(model in eval mode, info dict)``.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    CheckpointError
        Not a dgsr policy file, corrupt, or its checksum does not match.
    """
    path = _existing(path)
    sidecar = Path(f"{path}.sha256")
    if sidecar.is_file():
        expected = sidecar.read_text().split()[0] if sidecar.read_text().split() else ""
        actual = file_sha256(path)
        if expected != actual:
            raise CheckpointError(f"{path}: file checksum {actual[:12]}... does not match {sidecar.name} "
                                  f"({expected[:12]}...); the file is corrupt or was changed")
    meta = read_metadata(path)
    if meta.get("format") != FORMAT or "dgsr_config" not in meta:
        raise CheckpointError(f"{path} is not a dgsr policy checkpoint (no dgsr model config in its metadata)")
    try:
        config = ModelConfig.from_dict(json.loads(meta["dgsr_config"]))
        info = json.loads(meta.get("dgsr_info", "{}"))
        tensors = load_file(str(path), device="cpu")
    except (SafetensorError, ValueError, TypeError) as err:
        raise CheckpointError(f"{path}: cannot read the checkpoint ({err})") from err
    digest = tensors_sha256(tensors)
    if meta.get("dgsr_sha256") != digest:
        raise CheckpointError(f"{path}: tensor checksum mismatch (stored {meta.get('dgsr_sha256', '')[:12]}..., "
                              f"computed {digest[:12]}...); the file is corrupt")
    model = PolicyModel(config)
    try:
        model.load_state_dict(tensors, strict=True)
    except RuntimeError as err:
        raise CheckpointError(f"{path}: weights do not match the stored config ({err})") from err
    return model.to(device).eval(), info


def _existing(path: str | os.PathLike) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"policy checkpoint not found: {path}")
    return path


# ---------------------------------------------------------------------- training checkpoints
def save_training_state(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Atomically write a training checkpoint (model/optimizer/scheduler state dicts, RNG, step, ...)."""
    _atomic(Path(path), lambda tmp: torch.save(state, tmp))


def load_training_state(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_training_state`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"training checkpoint not found: {path}")
    try:
        # our own files only: they hold numpy RNG states and plain dicts besides tensors
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # torch raises several unrelated types for a broken file
        raise CheckpointError(f"{path}: cannot read the training checkpoint ({err})") from err
