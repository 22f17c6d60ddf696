"""Process-level infrastructure, the lowest layer: recognising a Ctrl-C (``interrupts``), wall-time
caps by SIGALRM (``time_cap``), atomic file writes (``files``), the garbage collector's thresholds
during a search (``collector``), thread pinning of the numerical libraries (``threads``), the
warning display (``warning_display``) and settings shared by concurrent blocks (``shared``).

Every change this layer makes to process-wide state (a signal handler, the collector's
thresholds, ``warnings.showwarning``, a thread count) is made inside a ``with`` block and undone
when the block ends, exceptions included. It imports nothing from dgsr's other layers; numerics
and everything above may import it."""
