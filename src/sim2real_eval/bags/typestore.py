"""Message types for reading and writing bags without ROS: rosbags' ROS 2 Humble store plus sbg_driver.

Humble .db3 bags carry no message definitions, so the sbg_driver types the ART vehicle records are
shipped here as .msg files, one folder per wire layout the released drivers used
(``msgdefs/<layout>/sbg_driver/*.msg``, read per tag from SBG-Systems/sbg_ros2_driver; each layout
is named after the first release that has it):

- ``"3.1"``: releases 3.0.0–3.1.0 (the layout of the ART Feb-2024 bags);
- ``"3.2"``: 3.2.0 (Oct 2024): SbgGpsPos gains ``num_sv_tracked``, SbgGpsPosStatus gains
  ifm/spoofing/osnma and per-signal flags, SbgEkfStatus drops the course flags and gains aiding
  flags (24 bools);
- ``"3.3"``: 3.3.0–3.3.1: SbgImuStatus gains ``imu_gyros_use_high_scale``;
- ``"3.3.2"``: 3.3.2 (the current release): SbgEkfStatus has 23 bools.

(1.0.x, the 2020 releases before Humble, stored positions as one Vector3 and are not supported.)
The layouts share their type names, so one typestore holds one layout; ``detect_sbg_layout`` tells
them apart by the serialised size of the messages.  A user folder of .msg files (``msg_path``) is
registered first and wins over the shipped definitions.
"""

from __future__ import annotations

import functools
from pathlib import Path

from rosbags.serde import SerdeError
from rosbags.typesys import Stores, TypesysError, get_types_from_msg
from rosbags.typesys import get_typestore as _rosbags_typestore
from rosbags.typesys.store import Typestore

from ..errors import UserError

SBG_LAYOUTS = ("3.1", "3.2", "3.3", "3.3.2")
MSGDEF_DIR = Path(__file__).resolve().parent / "msgdefs"
SBG_PACKAGE = "sbg_driver"


def sbg_msg_dir(layout: str) -> Path:
    """Folder holding the shipped sbg_driver .msg files of one layout."""
    if layout not in SBG_LAYOUTS:
        raise UserError(f"sbg_layout: unknown layout {layout!r} (expected one of {', '.join(SBG_LAYOUTS)})")
    return MSGDEF_DIR / layout / SBG_PACKAGE


def _package_of(msg_file: Path) -> str:
    """ROS package of a .msg file: ``<pkg>/msg/X.msg`` or ``<pkg>/X.msg``."""
    parent = msg_file.parent
    return parent.parent.name if parent.name == "msg" else parent.name


def types_from_msg_dir(directory) -> dict:
    """Parse every ``*.msg`` below ``directory`` into a rosbags types dict.

    The package name is taken from the path (``.../<pkg>/msg/Name.msg`` or ``.../<pkg>/Name.msg``),
    the type name is ``<pkg>/msg/<Name>``.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"{directory}: --msg-path is not a directory")
    files = sorted(directory.rglob("*.msg"))
    if not files:
        raise UserError(f"{directory}: --msg-path holds no .msg files")
    types: dict = {}
    for msg_file in files:
        name = f"{_package_of(msg_file)}/msg/{msg_file.stem}"
        try:
            types.update(get_types_from_msg(msg_file.read_text(encoding="utf-8"), name))
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{msg_file}: cannot read message definition ({exc})") from None
        except Exception as exc:  # rosbags raises parser-specific errors for bad syntax
            raise UserError(f"{msg_file}: invalid message definition ({exc})") from None
    return types


@functools.lru_cache(maxsize=16)
def _cached_typestore(msg_path: str | None, sbg_layout: str) -> Typestore:
    store = _rosbags_typestore(Stores.ROS2_HUMBLE)
    if msg_path is not None:
        user_types = types_from_msg_dir(msg_path)
        try:
            store.register(user_types)
        except TypesysError as exc:
            raise UserError(f"{msg_path}: {exc}") from None
    shipped = types_from_msg_dir(sbg_msg_dir(sbg_layout))
    store.register({name: fields for name, fields in shipped.items() if name not in store.fielddefs})
    return store


def get_typestore(msg_path=None, sbg_layout: str = "3.1") -> Typestore:
    """rosbags typestore: ROS 2 Humble + sbg_driver (``sbg_layout``, one of SBG_LAYOUTS) + ``msg_path`` types.

    The store is cached and shared per (msg_path, sbg_layout): treat it as read-only.
    """
    sbg_msg_dir(sbg_layout)  # validates the layout name
    key = None if msg_path is None else str(Path(msg_path).resolve())
    return _cached_typestore(key, sbg_layout)


# Types whose wire size differs between the layouts (the others are identical in both).
LAYOUT_DEPENDENT = (
    "sbg_driver/msg/SbgGpsPos",
    "sbg_driver/msg/SbgEkfNav",
    "sbg_driver/msg/SbgEkfQuat",
    "sbg_driver/msg/SbgEkfEuler",
    "sbg_driver/msg/SbgImuData",
)


def fits_layout(raw: bytes, msgtype: str, store: Typestore) -> bool:
    """True when ``raw`` (CDR) deserialises under ``store`` and re-serialises to the same bytes.

    A wrong layout either runs out of bytes, leaves bytes over, or reads a non-0/1 byte as a bool
    (which re-serialises differently).
    """
    try:
        msg = store.deserialize_cdr(raw, msgtype)
        return bytes(store.serialize_cdr(msg, msgtype)) == bytes(raw)
    except (SerdeError, TypesysError, KeyError, ValueError, OverflowError):
        return False


def detect_sbg_layout(samples: dict, source: str = "bag") -> str | None:
    """Pick the sbg_driver layout that fits the raw messages ``samples`` {msgtype: raw CDR bytes}.

    Returns None when no layout-dependent type is present (every layout reads the bag alike).  When
    several layouts reproduce the bytes exactly (a layout that differs by one status flag at the end
    of a sub-message can hide it in alignment padding), the numeric fields decode the same in all of
    them and the oldest is returned.  Raises UserError when no layout fits.
    """
    relevant = {t: raw for t, raw in samples.items() if t in LAYOUT_DEPENDENT}
    if not relevant:
        return None
    fitting = [
        layout for layout in SBG_LAYOUTS
        if all(fits_layout(raw, t, get_typestore(sbg_layout=layout)) for t, raw in relevant.items())
    ]
    if fitting:
        return fitting[0]
    names = ", ".join(sorted(relevant))
    raise UserError(
        f"{source}: sbg_driver messages ({names}) match neither layout {', '.join(SBG_LAYOUTS[:-1])} "
        f"nor {SBG_LAYOUTS[-1]}; "
        "pass the driver's .msg files with --msg-path"
    )
