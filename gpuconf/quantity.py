"""Kubernetes quantities (resource.Quantity): the one parser for node allocatable and capacity, intent fields and the
Kueue checks.

The grammar and the values are those of k8s.io/apimachinery/pkg/api/resource as Kueue v0.19.2 vendors it
(vendor/k8s.io/apimachinery/pkg/api/resource/quantity.go: the grammar comment, parseQuantityString and
ParseQuantity; suffix.go: newSuffixer and suffixHandler.interpret):

    quantity        ::= signedNumber suffix
    signedNumber    ::= number | sign number          sign ::= "+" | "-"
    number          ::= digits | digits "." digits | digits "." | "." digits
    suffix          ::= binarySI | decimalExponent | decimalSI
    binarySI        ::= Ki | Mi | Gi | Ti | Pi | Ei                    (2^10 ... 2^60)
    decimalSI       ::= n | u | m | "" | k | M | G | T | P | E         (10^-9 ... 10^18; "k" is 1000)
    decimalExponent ::= ("e" | "E") sign? digits                     (10^digits; an integer, parsed by ParseInt)

ParseQuantity rounds a non-zero value away from zero to a whole number of nano units, and caps a binary-SI value at
2^63-1. "1k" is 1000, "1Ki" 1024, "1E" 10^18 and "1E3" 1000 (E followed by digits is an exponent).
"""

from __future__ import annotations

import re
from fractions import Fraction

#: The grammar as a regular expression (ASCII digits only, as the API server's parser).
GRAMMAR = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
#: The grammar without a sign, for fields that take no negative quantity (a JSON Schema pattern: anchored).
UNSIGNED = r"^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$"

_PARTS = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NANO = Fraction(1, 10 ** 9)
_MAX_BINARY = 2 ** 63 - 1
#: gpuconf computes exact values; a decimal exponent beyond this (no API server writes one) is refused, not computed.
MAX_EXPONENT = 1000
MAX_LENGTH = 1000


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity (or one far beyond any real one)."""


def parse(text: str | int) -> Fraction:
    """The exact value of a quantity (an int is its own value). Raises QuantityError."""
    if isinstance(text, int) and not isinstance(text, bool):
        return Fraction(text)
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    if len(text) > MAX_LENGTH:  # int() refuses over 4,300 digits; no API server writes such a number
        raise QuantityError(f"a quantity of {len(text)} characters is no quantity gpuconf computes")
    match = _PARTS.fullmatch(text)
    if match is None or not (match[2] or match[3]):
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    sign, whole, fraction, suffix = match[1], match[2], match[3] or "", match[4] or ""
    mantissa = Fraction(int(whole + fraction), 10 ** len(fraction))
    if suffix in _BINARY:
        value = mantissa * 2 ** _BINARY[suffix]
    else:
        exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"{text!r}: an exponent beyond {MAX_EXPONENT} is no quantity gpuconf computes")
        value = mantissa * Fraction(10) ** exponent
    if value % _NANO:  # rounded up (away from zero) to a whole number of nano units, as ParseQuantity does
        value = (value // _NANO + 1) * _NANO
    if suffix in _BINARY:
        value = min(value, Fraction(_MAX_BINARY))
    return -value if sign == "-" else value


def is_quantity(text: str) -> bool:
    """True when text is a quantity the API server accepts."""
    try:
        parse(text)
    except QuantityError:
        return False
    return True


def count(text: str | None) -> int | None:
    """A quantity that is a whole number of units, not negative ("8", "1k", "2e3"); None for anything else (absent,
    not a quantity, "500m", "-1")."""
    if text is None:
        return None
    if text.isascii() and text.isdigit() and len(text) <= 18:  # the usual form, without building a fraction
        return int(text)
    try:
        value = parse(text)
    except QuantityError:
        return None
    return int(value) if value.denominator == 1 and value >= 0 else None
