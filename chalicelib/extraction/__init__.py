"""Extraction of memories from finished turns: the transcript window
(``transcript``), the model call behind one interface (``models``), tolerant parsing of its JSON
array (``parse``) and applying the result to a bank (``job``). No Chalice here."""
