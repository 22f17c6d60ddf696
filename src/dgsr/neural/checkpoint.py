"""Model files and training checkpoints.

* **Model weights** (what ``policy=`` accepts and what ships under ``src/dgsr/neural/weights/``): one
  safetensors file; its metadata holds the :class:`~dgsr.neural.model_config.ModelConfig` as JSON
  (``dgsr_config``), a format tag, free-form training facts, ``dgsr_sha256``, the SHA-256 of
  the tensors (names, dtypes, shapes and bytes in name order), and ``dgsr_meta_sha256``, the
  SHA-256 of the other metadata fields and that tensor digest, so that a changed config (one
  character of ``n_heads``) is caught as surely as a changed weight; both are checked on every
  load (files written before the metadata digest existed load with a warning, unless a sidecar
  checksum covers the whole file). A file-level
  checksum beside the file (``<name>.sha256``, as ``sha256sum`` writes it) is checked too when
  present. Missing, truncated or altered files raise :class:`CheckpointError` (or
  ``FileNotFoundError``) with a message that names the file.
* **Training checkpoints** (``ckpt.pt`` of ``dgsr pretrain``, ``state.pt`` of ``dgsr search``;
  never shipped): model + optimizer + scheduler + RNG states + step, written atomically
  (temporary file + rename) so an interrupted write never leaves a broken checkpoint, and a
  resumed run continues at the same step with the same state. The file is a short header (a
  format tag and the SHA-256 of the rest) followed by ``torch.save``'s bytes; the checksum is
  verified before anything is unpickled, so a corrupted file is never resumed (and re-saved with
  a fresh, valid checksum). ``ckpt.pt`` is read with ``torch.load(weights_only=True)``;
  ``state.pt`` holds the search's own objects (archives, datasets) and needs full unpickling:
  like a pickle, resume only files you wrote or trust.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.runtime.files import atomic_write, atomic_write_path, atomic_write_text

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


_META_DIGEST = "dgsr_meta_sha256"


def metadata_sha256(metadata: dict[str, str]) -> str:
    """SHA-256 over every metadata field but the digest itself (names and values, in name order)."""
    h = hashlib.sha256()
    for key in sorted(k for k in metadata if k != _META_DIGEST):
        h.update(f"{len(key)}:{key}={len(metadata[key])}:{metadata[key]}|".encode())
    return h.hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of the file's bytes (what ``sha256sum`` prints)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_model(model: PolicyModel, path: str | os.PathLike, *, info: dict[str, Any] | None = None,
               write_sha256_file: bool = False, half: bool = False) -> str:
    """Write ``model`` as safetensors with its config in the metadata; returns the tensor SHA-256.

    ``info`` (JSON-serialisable training facts: steps, data, metrics) goes into the metadata as
    ``dgsr_info``. ``write_sha256_file`` also writes ``<path>.sha256`` with the file's checksum.
    ``half`` stores floating-point tensors as float16, half the bytes, so that a model twice the
    size still ships under the package's size limit; :func:`load_model` reads them back into the
    model's float32 parameters.
    """
    path = Path(path)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if half:
        tensors = {k: v.half() if v.is_floating_point() else v for k, v in tensors.items()}
    digest = tensors_sha256(tensors)
    metadata = {"format": FORMAT, "dgsr_config": json.dumps(model.config.to_dict()),
                "dgsr_sha256": digest, "dgsr_info": json.dumps(info or {})}
    metadata[_META_DIGEST] = metadata_sha256(metadata)
    atomic_write_path(path, lambda tmp: save_file(tensors, tmp, metadata=metadata))
    if write_sha256_file:
        atomic_write_text(f"{path}.sha256", f"{file_sha256(path)}  {path.name}\n")
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
    if _META_DIGEST in meta:
        if meta[_META_DIGEST] != metadata_sha256(meta):
            raise CheckpointError(f"{path}: metadata checksum mismatch (the stored config or facts were changed); "
                                  "the file is corrupt")
    elif not sidecar.is_file():
        warnings.warn(f"{path} has no metadata checksum (written by an older dgsr): its config is not verified; "
                      "re-save it with dgsr.neural.checkpoint.save_model to add one.", UserWarning, stacklevel=2)
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
_STATE_MAGIC = b"dgsr-training-state-1\n"


def save_training_state(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Atomically write a training checkpoint (model/optimizer/scheduler state dicts, RNG, step, ...)
    behind a header holding the SHA-256 of the serialised state."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    header = _STATE_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n"

    atomic_write(path, lambda fh: fh.writelines((header, payload)))


def load_training_state(path: str | os.PathLike, *, weights_only: bool = True) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_training_state`, checksum first.

    ``weights_only=False`` unpickles arbitrary objects (the search's ``state.pt``): only for
    files you wrote or trust, as with any pickle.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    CheckpointError
        Unreadable, truncated or corrupted (checksum mismatch), or (with ``weights_only``) it
        holds objects other than tensors and plain containers.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"training checkpoint not found: {path}")
    data = path.read_bytes()
    if data.startswith(_STATE_MAGIC):
        digest, _, payload = data[len(_STATE_MAGIC):].partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            raise CheckpointError(f"{path}: checksum mismatch; the checkpoint is corrupt or was changed "
                                  "(resume from an intact copy, or start again)")
    else:  # written before checksums existed (warned below once it reads at all)
        payload = data
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=weights_only)
    except pickle.UnpicklingError as err:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(err))
        if weights_only and found:
            raise CheckpointError(f"{path} holds objects other than tensors and plain data ({found.group(1)}); "
                                  "refusing to unpickle them") from None
        raise CheckpointError(f"{path}: cannot read the training checkpoint ({err})") from err
    except Exception as err:  # torch raises several unrelated types for a broken file
        raise CheckpointError(f"{path}: cannot read the training checkpoint ({err})") from err
    if payload is data:
        warnings.warn(f"{path} has no checksum (written by an older dgsr); it was read unverified.",
                      UserWarning, stacklevel=2)
    return state
