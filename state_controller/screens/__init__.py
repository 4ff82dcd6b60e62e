"""What a terminal shows: tables printed as ``kubectl get`` prints them (:mod:`.tables`),
the fleet's progress counted from the books (:mod:`.progress`), and the live screen of
``demo`` and ``bootstrap`` (:mod:`.live`).

Below every command that draws on a terminal, above the runtime whose books it reads.
"""
