"""The package version, in a module of its own: the report and the CLI read it without importing the package
root (which imports the engine, and so the report: an import cycle)."""
__version__ = "0.1.0"
