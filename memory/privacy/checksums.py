"""Checksums of exact formats: a number is sensitive only if its check digit is right.

Payment cards (Luhn), Chinese resident IDs, Hong Kong and Taiwan IDs, IBANs. These are the
rules that stay rules: they are arithmetic, not phrasing.
"""

from __future__ import annotations

from datetime import date

_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)  # a digit doubled, digits summed, for Luhn
_TW_LETTERS = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))
# The first two digits of a resident ID: provinces, then Taiwan, Hong Kong and Macao.
CN_PROVINCES = frozenset(
    map(str, [*range(11, 16), *range(21, 24), *range(31, 38), *range(41, 47), *range(50, 55)])
) | frozenset(map(str, [*range(61, 66), 71, 81, 82]))


def luhn_ok(digits: str) -> bool:
    """Return True if a digit string passes the Luhn checksum (payment cards)."""
    backwards = digits[::-1]
    total = sum(map(int, backwards[::2])) + sum(_DOUBLED[int(c)] for c in backwards[1::2])
    return total % 10 == 0


def cn_id_ok(number: str) -> bool:
    """Return True if an 18-character Chinese resident ID has a valid check character."""
    if len(number) != 18 or not (number[:17].isascii() and number[:17].isdigit()):
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(number[:17], weights, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def hk_id_ok(letters: str, digits: str, check: str) -> bool:
    """Return True if a Hong Kong identity card number's check digit is right.

    Args:
        letters: The one or two leading capitals.
        digits: The six digits.
        check: The check character, 0-9 or A (written in brackets on the card).
    """
    values = ([36] if len(letters) == 1 else []) + [ord(c) - 55 for c in letters]
    values += [int(c) for c in digits]
    total = sum(v * w for v, w in zip(values, range(9, 1, -1), strict=True))
    return (11 - total % 11) % 11 == (10 if check == "A" else int(check))


def tw_id_ok(number: str) -> bool:
    """Return True if a Taiwan ID (a letter, 1 or 2, eight digits) has a valid check digit."""
    code = _TW_LETTERS.get(number[:1])
    if code is None or len(number) != 10 or not number[1:].isdigit():
        return False
    weights = (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1)
    digits = [code // 10, code % 10, *map(int, number[1:])]
    return sum(d * w for d, w in zip(digits, weights, strict=True)) % 10 == 0


def cn_id_date_ok(number: str) -> bool:
    """Return True if a Chinese resident ID's birth date is a real day from 1900 to today."""
    try:
        born = date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    return date(1900, 1, 1) <= born <= date.today()


def iban_ok(value: str) -> bool:
    """Return True if an IBAN (spaces allowed) passes its mod-97 check."""
    iban = value.replace(" ", "")
    if not 15 <= len(iban) <= 34:
        return False
    return int("".join(str(int(c, 36)) for c in iban[4:] + iban[:4])) % 97 == 1
