"""clawshell: a drop-in shell for AI coding agents with policy, kernel sandbox and receipts."""

__version__ = "0.1.0"
