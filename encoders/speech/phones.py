"""Phone sets: Festival's radio phones plus h#, TIMIT's 61 phones, and the 39-class folding of Lee & Hon 1989."""

from __future__ import annotations

from typing import Literal

# --- phone sets -----------------------------------------------------------------------------
# Festival's radio phone set (festival/lib/radio_phones.scm) plus TIMIT's utterance-edge h#
FESTIVAL_PHONES = (
    "aa ae ah ao aw ax axr ay b ch d dh dx eh el em en er ey f g hh hv ih iy jh k l m n nx ng "
    "ow oy p r s sh t th uh uw v w y z zh pau brth h#"
).split()
TIMIT61 = (
    "aa ae ah ao aw ax ax-h axr ay b bcl ch d dcl dh dx eh el em en eng epi er ey f g gcl h# hh "
    "hv ih ix iy jh k kcl l m n ng nx ow oy p pau pcl q r s sh t tcl th uh uw ux v w y z zh"
).split()
# Lee & Hon 1989: 61 -> 39 (closures, pauses and h# -> sil; q has no class: its frames are
# ignored and counted). Festival's extra phone brth is a silence too.
FOLD39 = {
    "ao": "aa", "ax": "ah", "ax-h": "ah", "axr": "er", "hv": "hh", "ix": "ih", "el": "l",
    "em": "m", "en": "n", "nx": "n", "eng": "ng", "zh": "sh", "ux": "uw",
    "pcl": "sil", "tcl": "sil", "kcl": "sil", "bcl": "sil", "dcl": "sil", "gcl": "sil",
    "h#": "sil", "pau": "sil", "epi": "sil", "brth": "sil", "q": None,
}
TIMIT39 = sorted({FOLD39.get(p, p) for p in TIMIT61 + FESTIVAL_PHONES} - {None})
PhoneSet = Literal["festival", "timit61", "timit39"]


def phone_names(phone_set: PhoneSet) -> list[str]:
    if phone_set == "festival":
        return list(FESTIVAL_PHONES)
    if phone_set == "timit61":
        return list(TIMIT61)
    if phone_set == "timit39":
        return list(TIMIT39)
    raise ValueError(f"phone_set must be 'festival', 'timit61' or 'timit39', got {phone_set!r}")


# --- scoring in the 39 classes -----------------------------------------------------------------
def fold39_runs(phones: list[str | None]) -> list[int]:
    """Indices into ``phones`` (a segment sequence) where a run of equal 39-class labels starts:
    neighbours that fold into one class (ax ah, pau h#) are one segment of it. A phone without a
    class (None, or TIMIT's q) is a class of its own here."""
    folded = [FOLD39.get(p, p) if p is not None else None for p in phones]
    return [i for i in range(len(folded)) if i == 0 or folded[i] != folded[i - 1]]


def scoring_phones(phones: list[str | None]) -> list[str]:
    """The sequence phone error rates are scored on (TIMIT's convention, Lee & Hon 1989): each
    phone folded to the 39 classes, equal neighbours merged into one, then the silences (sil:
    h#, pau, brth, epi, closures) and phones without a class (q) dropped."""
    folded = [FOLD39.get(p, p) if p is not None else None for p in phones]
    return [folded[i] for i in fold39_runs(phones) if folded[i] not in (None, "sil")]
