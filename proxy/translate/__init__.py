"""The pure translation core: plain data in, plain data out, no I/O and no globals."""
