"""batfeed: HPC schedulers, user-feedback models and a Batsim-4.2-compatible engine."""
__version__ = "0.1.0"
