"""An index's options as one spec: what each option means for every path that writes or finds.

An index is made with a scheme and k (layout.py), and four options beyond them:

* ``signatures``: the SimHashes kept per document (text/signatures.py): ``body`` alone, or
  ``body,leadN``; each signature has rows of its own (``schemes``), so a document has
  ``rows_per_document`` index rows;
* ``probes``: per signature, how many of a query's least sure bits a lookup also flips, one at a
  time (lookup.py): more scans, no more rows; a probe's match reaches k + 1 bits;
* ``confirm``: T, the sketch bits a match beyond 3 bits may differ in (confirm.py): each cell's
  column and each document row also hold the text's sketch;
* ``ttl``: seconds a document counts (retention.py): older ones stop matching;
* ``short``: ``"words"``, the short-text rule (text/units.py, confirm.py): a match of which either
  document is short (under 200 characters) counts, at any distance, only when both are, their
  numbers are the same and the words of one are among the other's (but one misspelled); the cells and rows hold the
  sketch (the short flag) as with ``confirm``, and a short document's text as the rule keeps it.

``IndexSpec`` checks a combination once, from one table (``RULES``): whatever it lets through
works on every path (both engines' load, check and groups, ``load --skip-near-dups``, ``check
--add-new``, ``load --groups``, the service). Every path asks the spec, not the options, what a
lookup needs (``lookup_args``), what a document row holds (``head``), which inputs it cannot take
(``check_inputs``), and how the index is described (``describe``, ``config``, ``summary``).

``PRESETS`` name the measured settings (docs/quality.md), so that the best one is one flag:
``init --preset recall``. This module does no I/O and fingerprints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..text.signatures import Signatures
from .confirm import check_confirm, check_short, sketch_spec
from .lookup import check_probes, parse_probes
from .plan import choose_scheme
from .retention import describe as describe_duration

# name -> (the options it sets, what docs/quality.md measured: overall recall / false matches per
# lookup at k = 3 on the news copies, 10 kinds x 1,000, and what it costs)
PRESETS: dict[str, tuple[dict[str, Any], str]] = {
    "default": ({}, "recall 0.622, false matches 0.0000 per lookup; 4 rows a document (scheme 4)"),
    "recall": ({"signatures": "body,lead150", "probes": "8,1", "confirm": 14},
               "recall 0.800, false matches 0.0002 per lookup; 2x the rows, 10 scans a lookup, "
               "a sketch of 10 bytes in each cell"),
}


def preset_options(name: str | None, **given: Any) -> dict[str, Any]:
    """The options ``PRESETS[name]`` sets (None: none), each overridden by one ``given`` that is
    not None; an unknown name is refused."""
    if name is not None and name not in PRESETS:
        raise InvalidInput(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
    return {**(PRESETS[name][0] if name else {}), **{option: v for option, v in given.items() if v is not None}}


@dataclass(frozen=True)
class IndexSpec:
    """The options of one index, checked together; build with ``IndexSpec.make``."""

    scheme: Any  # layout.Scheme
    k: int
    signatures: Signatures = Signatures()
    probes: tuple[int, ...] = ()
    confirm: int | None = None
    ttl: int | None = None
    short: str | None = None

    @classmethod
    def make(cls, scheme=None, k: int = 3, signatures: Signatures | str | Sequence[str] | None = None,
             probes: Sequence[int] | str | None = None, confirm: int | None = None,
             ttl: int | None = None, short: str | None = None) -> "IndexSpec":
        """A spec from options as a user gives them: ``scheme`` None (``plan.choose_scheme``),
        ``"5"`` or a ``Scheme``; ``signatures`` ``"body,lead150"``; ``probes`` ``"8,1"``. Every
        combination ``RULES`` refuses raises ``InvalidInput`` naming its argument."""
        scheme = choose_scheme(k, scheme)
        signatures = signatures if isinstance(signatures, Signatures) else Signatures.parse(signatures)
        spec = cls(scheme, scheme.check_k(k), signatures, check_probes(parse_probes(probes), len(signatures)),
                   confirm, ttl, short)
        for rule in RULES:
            rule(spec)
        return spec

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "IndexSpec":
        """The spec an index's metadata records (``config``)."""
        return cls.make(config["scheme"], config["k"], config.get("signatures"), config.get("probes", ()),
                        config.get("confirm"), config.get("ttl_s"), config.get("short"))

    # -- what the options mean ------------------------------------------------------

    @property
    def several(self) -> bool:
        """Whether a document has signatures beyond the body's."""
        return len(self.signatures) > 1

    @property
    def probed(self) -> bool:
        """Whether a lookup flips bits of any signature."""
        return any(self.probes)

    @property
    def confirmed(self) -> bool:
        """Whether matches beyond 3 bits are confirmed by sketches (cells and rows hold them)."""
        return self.confirm is not None

    @property
    def sketched(self) -> bool:
        """Whether the cells and rows hold a sketch: a confirmation, or the short-text rule."""
        return self.confirmed or self.short is not None

    @property
    def schemes(self) -> list:
        """Per signature, its scheme (its own flags: layout.Scheme.for_signature)."""
        return [self.scheme.for_signature(j) for j in range(len(self.signatures))]

    @property
    def names(self) -> list[str | None]:
        """Per signature, the name a match says it was found under; [None]: the body alone."""
        return list(self.signatures.names) if self.several else [None]

    @property
    def rows_per_document(self) -> int:
        return len(self.scheme.flags) * len(self.signatures)

    @property
    def head(self) -> int:
        """The bytes of a document row before its metadata: every signature's simhash, the sketch."""
        return 8 * (len(self.signatures) + self.sketched)

    def needs_texts(self, lookups: bool = True) -> str | None:
        """What of this index a document given by its simhash alone cannot give (its other
        signatures, its sketch, and for ``lookups`` its probes: all made from the text), or None."""
        if self.several:
            return f"signatures {self.signatures.label}"
        if self.probed and lookups:
            return "probes"
        if self.confirmed:
            return f"a confirmation (sketches within {self.confirm} bits)"
        return "the short-text rule (short texts near by their words)" if self.short is not None else None

    def check_inputs(self, precomputed: bool, lookups: bool = False, who: str = "an index") -> None:
        """Refuse precomputed fingerprints (``precomputed``) where this index (or ``who``: "groups")
        fingerprints the texts themselves (``needs_texts``; ``lookups``: the job looks its records up)."""
        if precomputed and (what := self.needs_texts(lookups)):
            off = "; an index made without the rule (short=off) takes them" if what.startswith("the short-text rule") else ""
            raise InvalidInput(f"{who} with {what} fingerprints the texts themselves: precomputed "
                               f"fingerprints (fingerprints=True) carry the body's simhash alone{off}",
                               arguments=("fingerprints", "short") if off else ("fingerprints",))

    def lookup_args(self, items: Sequence[Any], masks: Callable[[Any], Any] | None = None) -> tuple:
        """``Index.query_many``'s ``more``, ``probes``, ``sketches`` and ``kepts`` for ``items``
        (records or documents with ``.more``, ``.sketch`` and ``.kept``; ``masks(item)`` their
        probes, else ``.masks``): None for each this spec does not take."""
        return ([x.more for x in items] if self.several else None,
                [(masks(x) if masks else x.masks) for x in items] if self.probed else None,
                [x.sketch for x in items] if self.sketched else None,
                [x.kept for x in items] if self.short is not None else None)

    def worker_spec(self, fingerprint: Mapping[str, Any], lookups: bool = False) -> dict[str, Any]:
        """A fingerprinter's spec (``fingerprint``) with what workers also make for this index: the
        signatures' names (several), for ``lookups`` the probes per signature, the sketch's spec."""
        return {**fingerprint, **({"signatures": self.signatures.spec} if self.several else {}),
                **({"probes": list(self.probes)} if lookups and self.probed else {}),
                **({"sketch": sketch_spec(dict(fingerprint))} if self.confirmed else {}),
                **({"short": True} if self.short is not None else {})}

    # -- how it is written and said -------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The metadata entries of these options (beside the format, featurizer and creation time);
        ``short`` always (null: made without the short-text rule; an index made before the rule
        was the default has no such entry: ``Index.before_short_default``)."""
        return {"scheme": self.scheme.name, "k": self.k, **self._extras(ttl_key="ttl_s"), "short": self.short}

    def summary(self) -> dict[str, Any]:
        """The options beyond scheme and k as ``stats`` shows them, with the preset they match
        (none for the default's: an index of the default options shows nothing more)."""
        preset = self.preset
        return {**self._extras(ttl_key="ttl_s"), **({"preset": preset} if preset not in (None, "default") else {})}

    def _extras(self, ttl_key: str) -> dict[str, Any]:
        return {**({ttl_key: self.ttl} if self.ttl else {}),
                **({"signatures": self.signatures.spec} if self.several else {}),
                **({"probes": list(self.probes)} if self.probed else {}),
                **({"confirm": self.confirm} if self.confirmed else {}),
                **({"short": self.short} if self.short is not None else {})}

    @property
    def preset(self) -> str | None:
        """The name of the preset these options are (at k = 3, whatever the scheme, ttl and short-text rule), or None."""
        for name, (options, _) in PRESETS.items():
            if self.k == 3 and IndexSpec.make(self.scheme, 3, ttl=self.ttl, short=self.short, **options) == self:
                return name
        return None

    def describe(self) -> str:
        """The options beyond scheme and k in words, each after ", " ("" for none)."""
        return (f"{f', signatures {self.signatures.label}' if self.several else ''}"
                f"{f', probes {list(self.probes)}' if self.probed else ''}"
                f"{f', matches beyond 3 bits confirmed within {self.confirm} bits' if self.confirmed else ''}"
                f"{', short texts near only by their words' if self.short is not None else ''}"
                f"{f', ttl {describe_duration(self.ttl)} (older documents stop matching and are removed)' if self.ttl else ''}")


def _confirm_needs_beyond_3(spec: IndexSpec) -> None:
    check_confirm(spec.confirm, spec.k, spec.probed)


def _short_rule(spec: IndexSpec) -> None:
    check_short(spec.short)


def _ttl_positive(spec: IndexSpec) -> None:
    if spec.ttl is not None and (isinstance(spec.ttl, bool) or not isinstance(spec.ttl, int) or spec.ttl < 1):
        raise InvalidInput(f"ttl is a whole number of seconds >= 1, not {spec.ttl!r}")


def _signatures_fit_the_scheme(spec: IndexSpec) -> None:
    spec.schemes  # noqa: B018 - raises for a scheme of more flags than a signature has


# Every combination refused, in one place: each rule raises InvalidInput for what it refuses.
# (The scheme refuses a k it cannot guarantee, probes their count, when the spec is made.)
RULES: tuple[Callable[[IndexSpec], None], ...] = (_confirm_needs_beyond_3, _short_rule, _ttl_positive,
                                                  _signatures_fit_the_scheme)
