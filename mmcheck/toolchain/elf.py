"""The few facts mmcheck reads of an ELF file (a cubin, or the emulator's module): its symbols, and the relocation
at an address.  64-bit little-endian ELF alone, as both are; read with struct, where a general reader's import
took a twentieth of a second of every run that looked a kernel up."""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Elf", "Symbol", "FUNCTION", "OBJECT", "UNDEFINED"]

_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")  # ident, type, ... section headers' offset, ... count, names' index
_SECTION = struct.Struct("<IIQQQQIIQQ")       # name, type, flags, address, offset, size, link, info, align, entry
_SYMBOL = struct.Struct("<IBBHQQ")            # name, info, other, section index, value, size
_REL, _RELA = struct.Struct("<QQ"), struct.Struct("<QQq")  # offset, info (symbol << 32 | type)[, addend]
_SYMBOL_TABLES, _RELOCATIONS = (2, 11), {9: _REL, 4: _RELA}  # SHT_SYMTAB, SHT_DYNSYM; SHT_REL, SHT_RELA
_SHARED = 3  # ET_DYN
OBJECT, FUNCTION = 1, 2  # a symbol's type: STT_OBJECT, STT_FUNC
UNDEFINED = 0  # SHN_UNDEF: the section of a symbol the file leaves to others


@dataclass(frozen=True)
class Symbol:
    name: str
    type: int
    section: int  # the index of the section it is defined in (UNDEFINED: none)
    value: int    # its address, or its offset in its section


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    link: int  # a symbol table's names, a relocation section's symbol table
    info: int  # a relocation section's: the section it applies to (0: addresses of the whole file)


class Elf:
    """An ELF file's sections, read from its bytes; ValueError where they are no 64-bit little-endian ELF."""

    def __init__(self, data: bytes) -> None:
        if len(data) < _HEADER.size or data[:6] != b"\x7fELF\x02\x01":
            raise ValueError("not a 64-bit little-endian ELF file")
        self._data = data
        header = _HEADER.unpack_from(data)
        self._type, offset, size, count, names = header[1], header[6], header[11], header[12], header[13]
        if size != _SECTION.size or offset + count * size > len(data):
            raise ValueError("an ELF file whose section headers are cut short")
        raw = [_SECTION.unpack_from(data, offset + i * size) for i in range(count)]
        text = raw[names][4] if names < count else None  # where the sections' names are
        self._sections = [_Section("" if text is None else self._string(text, name), kind, at, length, link, info)
                          for name, kind, _, _, at, length, link, info, _, _ in raw]

    @property
    def shared(self) -> bool:
        """A shared library (whose relocations apply at addresses, not within a section)."""
        return self._type == _SHARED

    def symbols(self, table: str) -> list[Symbol]:
        """The symbols of the symbol table named ``table`` (".symtab", ".dynsym"), the null one first; none where
        there is no such table."""
        found = next((i for i, s in enumerate(self._sections) if s.name == table and s.type in _SYMBOL_TABLES), None)
        return [] if found is None else self._table(found)

    def relocation(self, section: int, offset: int) -> tuple[Symbol | None, int | None] | None:
        """The first relocation that applies to ``section`` (0: at the file's addresses) at ``offset``: the
        symbol it names (None: none) and its addend (None: a relocation without one); None where there is no
        such relocation."""
        for s in self._sections:
            entry = _RELOCATIONS.get(s.type)
            if entry is None or s.info != section:
                continue
            for i in range(s.size // entry.size):
                at, info, *addend = entry.unpack_from(self._data, s.offset + i * entry.size)
                if at == offset:
                    index = info >> 32
                    return (self._table(s.link)[index] if index else None), (addend[0] if addend else None)
        return None

    def _table(self, index: int) -> list[Symbol]:
        table = self._sections[index]
        names = self._sections[table.link].offset
        entries = (_SYMBOL.unpack_from(self._data, table.offset + i * _SYMBOL.size)
                   for i in range(table.size // _SYMBOL.size))
        return [Symbol(self._string(names, name), info & 0xF, section, value)
                for name, info, _, section, value, _ in entries]

    def _string(self, table: int, at: int) -> str:
        end = self._data.index(b"\0", table + at)
        return self._data[table + at:end].decode("latin-1")
