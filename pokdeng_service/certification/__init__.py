"""Certification evidence a test lab can file (docs/certification.md).

* ``schedule``: the documented seed schedule of the shoes the RNG report shuffles;
* ``fastshuffle``: ``pokdeng-shuffle-v1`` (docs/shuffle.md) for many shoes at once, byte for byte the
  reference's order (vectorised Fisher-Yates, rejections handed to the reference);
* ``tallies``: what one run of shoes counts (cards by position, hands, serial pairs, runs), over processes;
* ``stats``: the distributions, p-values, the Holm correction and the power of the tests, by hand;
* ``battery``: the HMAC byte stream through dieharder;
* ``rng``: ``pokdeng rng-report``; ``math``: ``pokdeng math-report``; ``render``: their HTML, plots and JSON.

Only the core and libraries are imported (a layer of its own beside the server's, docs/architecture.md).
"""
