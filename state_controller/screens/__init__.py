"""What a terminal shows: tables printed as ``kubectl get`` prints them (:mod:`.tables`),
the fleet's progress counted from the books (:mod:`.progress`), and the live screen of
``demo`` and ``bootstrap``: each HostState read as a row and sorted for a person
(:mod:`.rows`), fitted into a frame (:mod:`.live`), drawn on the terminal
(:mod:`.terminal`), or saved as a picture for the docs (:mod:`.picture`).

Below every command that draws on a terminal, above the runtime whose books it reads.
"""
