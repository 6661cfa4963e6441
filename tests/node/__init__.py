"""The Node.js side of the test suite: the pinned npm packages (``packages``), the Node client ``play.js``."""
