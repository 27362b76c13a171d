"""Redaction: the one audited way to change the log (`diarist redact`), and the clean-up that
leaves no copy of what it masked anywhere under the home."""
