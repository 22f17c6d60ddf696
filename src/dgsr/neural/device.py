"""Checking a torch device before the neural policy is loaded onto it."""

from __future__ import annotations


def check_device(device: str) -> str:
    """``device`` when torch can use it here; else one ValueError saying what to do.

    ``device="cuda"`` on a CPU-only torch used to fail deep inside torch with an AssertionError
    (issue 48); an unknown name or a GPU index beyond those present fails the same way.
    """
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as err:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r} ({err})") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            why = "was built without CUDA" if torch.version.cuda is None else "finds no CUDA GPU"
            raise ValueError(f"device={device!r}, but this torch ({torch.__version__}) {why}: pass device='cpu', "
                             "or install a CUDA build of torch on a machine with an NVIDIA GPU.")
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            raise ValueError(f"device={device!r}, but torch sees {count} CUDA GPU(s) (cuda:0 to cuda:{count - 1}).")
    elif parsed.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"device={device!r}, but this torch has no MPS (Apple GPU) support here: "
                             "pass device='cpu'.")
    return device
