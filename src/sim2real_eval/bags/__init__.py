"""Bag I/O without ROS (rosbags): typestore with sbg_driver, reader, writer, message writers and column
readers (driven by ``message_fields``).  Ground truth read from a bag is ``truth.bag``'s.

Import the submodules directly for the rest (``bags.messages``, ``bags.columns``, ``bags.cdr``); the
I/O entry points are re-exported here.
"""

from __future__ import annotations

from .reader import BagMessage, BagReader, RawMessage, TopicInfo, open_bag
from .typestore import SBG_LAYOUTS, detect_sbg_layout, get_typestore
from .writer import write_bag

__all__ = [
    "SBG_LAYOUTS",
    "BagMessage",
    "BagReader",
    "RawMessage",
    "TopicInfo",
    "detect_sbg_layout",
    "get_typestore",
    "open_bag",
    "write_bag",
]
