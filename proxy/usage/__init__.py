"""Usage and cost per client key id x model x UTC day (issue 61 item 1; partial, see meter.py)."""
