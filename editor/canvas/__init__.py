"""The canvas: a QGraphicsScene projection of the document, its view and interactions."""
