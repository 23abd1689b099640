"""The canvas: the document's projection (``projected_scene``), the editing scene on it
(``scene``) with its gestures (``interactions``), the view, link routing, what is painted
behind the items (``background``) and the run shown on the cards (``run_overlay``, from the
engine's :class:`engine.RunState`)."""
