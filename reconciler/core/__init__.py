"""The pure decision core: enums, the transition table, planning, approval rules, freezes.

Purely data-manipulative and computational: no external calls, no I/O, no clock.
"""
