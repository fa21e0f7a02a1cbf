"""Human in the loop: the approval queue (``queue``), TOTP codes (``otp``, pure) and
the emergency stop (``estop``).  See docs/approvals.md.

Nothing is imported here, so ``from clawshell.approval.estop import check`` on the
hot path costs only that module.
"""
