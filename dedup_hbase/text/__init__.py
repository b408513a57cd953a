"""From text to fingerprint: the lines copies gain on the web (``boilerplate``), text to weighted
features (``features``), features to a 64-bit SimHash (``fingerprint``), and the compiled core
that computes the same fingerprints faster (``native``)."""
