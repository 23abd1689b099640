"""Scene items: one NodeItem paints a node with its ports; EdgeItem is a lean cached path."""
