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
