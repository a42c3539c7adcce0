"""What the built-in guardrails look for, as RE2 patterns (linear time, whatever the text) with checks where a
pattern alone would say too much (a card number's Luhn digit, an IBAN's mod-97 checksum).

- `secrets`: private keys (PEM), AWS access key ids, GitHub, GitLab, Slack, Stripe, Google, OpenAI, Anthropic,
  npm and SendGrid key formats, JWTs, and bearer tokens written after "Bearer".
- `personal_data`: e-mail addresses, phone numbers in international form (+33 1 23 45 67 89) or the North
  American (555) 123-4567, payment card numbers (13 to 19 digits, Luhn-checked) and IBANs in any case (mod-97-checked;
  in lower or mixed case, also their country and length).
- `injection`: instructions aimed at a model (ignore the previous instructions, you are now..., chat-template
  markers such as <|im_start|> or [INST]) and characters a reader does not see (zero-width, bidirectional
  overrides, Unicode tags).

At one place in a text, the first pattern listed that matches names it (an Anthropic key is not called an OpenAI
one). A text is first searched once with all of a detector's patterns: most answers hold nothing, and that search is
all they cost. Only a text where something is found is searched for every match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import re2

_START: Final = r"(?:\\[nrtbf]|\b)"
"""Where a word starts: a word boundary, or after a JSON escape (`\\n`): texts are searched as JSON too, where a line
break before a key is written `\\n`, whose `n` would join the key's word (the escape itself is left out of the
match: `Detector.matches`)."""
_START_OR_UNDERSCORE: Final = r"(?:\\[nrtbf]|\b|_)"
"""The same, or after an underscore (`token_ghp_...`, which a boundary alone misses)."""

_SECRETS: Final = {
    # the whole block, up to its END line (or the text's end): redacting the BEGIN line alone passed the key on
    "private_key": r"-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]{0,20}PRIVATE KEY-----|$)",
    "aws_access_key_id": _START_OR_UNDERSCORE + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "github_token": _START_OR_UNDERSCORE + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
    "gitlab_token": _START_OR_UNDERSCORE + r"glpat-[0-9A-Za-z_-]{20,}",
    "slack_token": _START_OR_UNDERSCORE + r"xox[abprs]-[A-Za-z0-9-]{10,}",
    "stripe_key": _START_OR_UNDERSCORE + r"[sr]k_live_[0-9A-Za-z]{24,}",
    "google_api_key": _START_OR_UNDERSCORE + r"AIza[0-9A-Za-z_-]{35}",
    "anthropic_key": _START_OR_UNDERSCORE + r"sk-ant-[A-Za-z0-9_-]{32,}",
    "openai_key": _START_OR_UNDERSCORE + r"sk-(?:proj-)?[A-Za-z0-9_-]{32,}",
    "npm_token": _START_OR_UNDERSCORE + r"npm_[A-Za-z0-9]{36}\b",
    "sendgrid_key": _START_OR_UNDERSCORE + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
    "jwt": _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "bearer_token": r"(?i:" + _START + r"bearer)\s+[A-Za-z0-9._~+/-]{16,}=*",
}
_PERSONAL: Final = {
    "email": _START + r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b",
    "phone": r"(?:\+[1-9][0-9]{0,2}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{1,4}(?:[ .-]?[0-9]{2,4}){2,5}"
    r"|\([0-9]{3}\) ?[0-9]{3}[-.][0-9]{4})\b",
    "payment_card": _START + r"(?:[0-9]{13,19}|[0-9]{4}(?:[ -][0-9]{4}){3}(?:[ -]?[0-9]{1,3})?"
    r"|[0-9]{4}[ -][0-9]{6}[ -][0-9]{5})\b",
    # any case (people write `fr76 3000 ...`); one not in capitals must also name an IBAN country at its length
    "iban": r"(?i:" + _START + r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b)",
}
_INJECTION: Final = {
    "instruction_override": r"(?i:" + _START + r"(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?|any\s+|your\s+)?"
    r"(?:the\s+)?(?:previous|prior|above|earlier|preceding)\s+(?:instructions|prompts?|directions|rules))",
    "role_change": r"(?i:" + _START + r"(?:you\s+are\s+now\s+(?:a|an|in|the|my)\b|new\s+instructions\s*:|"
    r"system\s+prompt\s*:))",
    "template_marker": r"<\|im_(?:start|end)\|>|<\|(?:system|user|assistant)\|>|\[/?INST\]|<</?SYS>>|</?system>",
    "hidden_characters": r"[\x{00AD}\x{061C}\x{180E}\x{200B}-\x{200F}\x{202A}-\x{202E}\x{2060}-\x{2064}"
    r"\x{2066}-\x{2069}\x{FEFF}\x{E0000}-\x{E007F}]+",
}


def luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(text: str) -> bool:
    """A card number, perhaps followed by its security code or expiry month (`4111 1111 1111 1111 123`: the
    pattern's last group may be either)."""
    return _luhn_checked(text) or _luhn_checked(_LAST_GROUP.sub("", text))


def _luhn_checked(text: str) -> bool:
    digits = "".join(c for c in text if c.isdigit())
    return 13 <= len(digits) <= 19 and digits[0] != "0" and luhn(digits)


_LAST_GROUP: Final = re2.compile(r"[ -]?[0-9]{1,3}$")


_IBAN_REGISTRY: Final = (
    "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BI:27 BR:29 BY:28 CH:21 CR:22 CY:28 CZ:24 DE:22 DJ:27 DK:18 "
    "DO:28 EE:20 EG:29 ES:24 FI:18 FK:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 GT:28 HN:28 HR:21 HU:28 IE:22 IL:23 "
    "IQ:23 IS:26 IT:27 JO:30 KW:30 KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 LY:25 MC:27 MD:24 ME:22 MK:19 MN:20 MR:27 "
    "MT:31 MU:30 NI:28 NL:18 NO:15 OM:23 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 RU:33 SA:24 SC:31 SD:18 SE:24 SI:19 "
    "SK:24 SM:27 SO:23 ST:25 SV:28 TL:23 TN:24 TR:26 UA:29 VA:22 VG:24 XK:20 YE:30"
)
_IBAN_LENGTHS: Final = {pair[:2]: int(pair[3:]) for pair in _IBAN_REGISTRY.split(" ")}
"""The IBAN registry's countries and the length of their IBANs. A candidate written in capitals needs only its checksum,
as it always did; one in lower or mixed case also needs its country and length here: hexadecimal ids (`ab12...`)
are written in lower case, and one in 97 of those would otherwise pass."""


def _iban(text: str) -> bool:
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    if not compact.isupper() and _IBAN_LENGTHS.get(compact[:2].upper()) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _phone(text: str) -> bool:
    return 8 <= sum(c.isdigit() for c in text) <= 15


_CHECKS: Final[Mapping[str, Callable[[str], bool]]] = {"payment_card": _card, "iban": _iban, "phone": _phone}


@dataclass(frozen=True, slots=True)
class Match:
    kind: str
    start: int
    end: int


_PHONE_ALONE: Final = re2.compile(_PERSONAL["phone"])
_CARD_ALONE: Final = re2.compile(_PERSONAL["payment_card"])


def _card_in_phone(text: str, start: int, end: int) -> tuple[Match, int] | None:
    """The phone number `text[start:end]` without its last group of digits, and where that group starts, when a
    card starts there and the phone number holds without it (`+33 1 23 45 67 89 4111 1111 1111 1111`: the
    pattern's last group may be a card's first)."""
    last = start + len(text[start:end].rstrip("0123456789"))
    card = _CARD_ALONE.match(text, last)
    phone = _phone_before(text, start, last) if card is not None and _card(card.group()) else None
    return (phone, last) if phone is not None else None


def _phone_before(text: str, start: int, end: int) -> Match | None:
    """The phone number a failed phone candidate (`text[start:]`) holds before a match found inside it at `end`
    (`+1 555 0100 4111 1111 1111 1111`: the pattern took the card's digits too, and failed on their count)."""
    head = text[start:end].rstrip(" .-")
    found = _PHONE_ALONE.fullmatch(head)
    return Match("phone", start, start + len(head)) if found is not None and _phone(head) else None


class Detector:
    """One kind of thing to look for (`secrets`, `personal_data`, `injection`), by several patterns."""

    __slots__ = ("_all", "_cards", "kinds", "name", "patterns")

    def __init__(self, name: str, patterns: Mapping[str, str]) -> None:
        self.name = name
        self.patterns = dict(patterns)
        self.kinds = tuple(patterns)
        self._all = re2.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in patterns.items()))
        self._cards = "payment_card" in patterns

    def found(self, text: str | bytes) -> bool:
        """Whether the text (or its UTF-8 bytes) may hold something (one search; `matches` says what, checks
        included)."""
        if isinstance(text, str):  # one kind of string per call, as RE2's types say
            return self._all.search(text) is not None
        return self._all.search(text) is not None

    def matches(self, text: str) -> list[Match]:
        out = []
        search, at, failed_end = self._all.search, 0, -1
        failed_phone: tuple[int, int] | None = None
        while (match := search(text, at)) is not None:
            index = match.lastindex  # the patterns capture nothing but their own group, in `kinds` order
            kind = self.kinds[index - 1] if index is not None else None
            start, found = match.start(), match.group()
            if found.startswith("\\"):  # after a JSON escape (`_START`): the escape stays, it is not what was found
                start, found = start + 2, found[2:]
            check = _CHECKS.get(kind) if kind is not None else None
            # A candidate that fails its check may hide a match starting inside it (`ref 2024 4111 1111 1111 1111`),
            # which counts when it goes on past the failed one: inside it (a card's digits in an IBAN whose checksum
            # is wrong), one in ten would pass Luhn by chance.
            if kind is not None and match.end() > failed_end and (check is None or check(found)):
                if failed_phone is not None and failed_phone[0] < start < failed_phone[1]:
                    phone = _phone_before(text, failed_phone[0], start)
                    if phone is not None:
                        out.append(phone)
                failed_phone = None
                split = _card_in_phone(text, start, match.end()) if kind == "phone" and self._cards else None
                if split is not None:
                    out.append(split[0])
                    at = split[1]
                    continue
                out.append(Match(kind, start, match.end()))
                at = max(match.end(), match.start() + 1)
            else:
                # A phone candidate fails on its digits' count, not a checksum: it hides nothing by chance,
                # and a number right after a phone number (a card) made it too long.
                if kind == "phone":
                    failed_phone = (start, match.end())
                else:
                    failed_end = max(failed_end, match.end())
                at = match.start() + 1
        return out


def replaced(text: str, matches: Sequence[Match], by: Callable[[Match], str]) -> str:
    """`text` with each of `matches` (in order, not overlapping) replaced by what `by` says of it."""
    parts: list[str] = []
    last = 0
    for match in matches:
        parts += (text[last : match.start], by(match))
        last = match.end
    parts.append(text[last:])
    return "".join(parts)


def together(detectors: Sequence[Detector]) -> Detector | None:
    """One detector looking for what all of `detectors` look for (None for none): a text RE2 searches costs about
    the same for one pattern as for all of them (its automaton reads each byte once), so one search tells
    whether any of them needs to look closer."""
    if not detectors:
        return None
    patterns: dict[str, str] = {}
    for detector in detectors:
        patterns.update(detector.patterns)
    return Detector("+".join(d.name for d in detectors), patterns)


DETECTORS: Final[Mapping[str, Detector]] = {
    "secrets": Detector("secrets", _SECRETS),
    "personal_data": Detector("personal_data", _PERSONAL),
    "injection": Detector("injection", _INJECTION),
}
