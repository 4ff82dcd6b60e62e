"""Sources another controller writes: what they show becomes transitions of a book.

An observed source never writes the object it reads, never invents a state it did not
see (a change missed between two looks is one marked jump), and takes the other
controller's own timestamps where it records them. Observed and driven hosts then share
every projection, metric, dashboard and alert.
"""
