"""batfeed: HPC schedulers, user-feedback models and a Batsim-4.2-compatible engine."""
from batfeed import kernel as _kernel

__version__ = "0.1.0"
_kernel.install()   # the compiled kernel's modules, unless BATFEED_PURE=1 (batfeed/kernel.py)
