"""NMEA 0183 receiver logs → ``/fix`` bags (docs/import.md, "NMEA receiver logs").

Most GNSS receivers log NMEA text; ROS reads it with nmea_navsat_driver.  This reader takes the log as
it comes (one sentence a line, any talker: GP, GN, GL, GA, BD, GB, QZ, …) and keeps:

- ``GGA``: UTC time of day, latitude/longitude (ddmm.mmmm / dddmm.mmmm + hemisphere), fix quality,
  HDOP, altitude above mean sea level and the geoid separation N;
- ``RMC``: the UTC date (ddmmyy) of its epoch;
- ``GST``: the receiver's 1-σ latitude, longitude and altitude error (m);
- ``VTG``: speed over ground (only counted and summarised: a tripod log has none to speak of).

Every sentence's checksum (XOR of the characters between ``$`` and ``*``) is verified.  A line that
is not a valid sentence — bad or missing checksum, truncated, a field that does not parse — is
counted by reason (the first line of each reason kept) and left out; other sentence types (GSA, GSV,
TXT, proprietary) are counted as ignored.  Only a log without one usable fix is refused.

Mappings (nmea_navsat_driver, ros2 branch, read for its behaviour; the differences are stated):

- Fix quality (GGA field 6) → NavSatStatus.status: 1 GPS → FIX; 2 DGPS → SBAS_FIX; 4 RTK fixed,
  5 RTK float, 9 WAAS → GBAS_FIX; 0 invalid and every other value (3 PPS, 6 dead reckoning,
  7 manual, 8 simulator) → NO_FIX, as the driver does.  NO_FIX epochs are not written (the judge and
  calibrate drop them anyway); they are counted.
- NavSatStatus.service from the GGA talker: GP/QZ → GPS, GL → GLONASS, GA → GALILEO, BD/GB → COMPASS;
  GN (a combined solution) and any other talker → GPS, which is what the driver writes for every fix.
- Covariance, first match per fix: ``--fix-covariance SIGMA`` (σ_e = σ_n = SIGMA, σ_u = 2·SIGMA,
  APPROXIMATED); GST of the same epoch, else the latest one at most 2 s old (σ_e = lon σ, σ_n = lat σ,
  σ_u = alt σ, DIAGONAL_KNOWN — the driver instead multiplies the last GST σ, however old, by the
  HDOP and calls it APPROXIMATED); else the driver's
  HDOP formula σ_e = σ_n = HDOP·epe(quality), σ_u = 2·HDOP·2·epe, APPROXIMATED, with its default epe
  per quality (1: 4 m, 2: 0.1 m, 4: 0.02 m, 5: 4 m, 9: 3 m); else an error naming the line.
- Altitude: ellipsoidal height h = MSL altitude + N (GGA fields 9 and 11), as the driver computes it.
  A GGA without N keeps the altitude as given, counted (the receiver does not say which height it is).
- Time: GGA/RMC/GST carry the UTC time of day; sentences with one time of day form one epoch (VTG,
  which has none, joins the epoch before it).  The date comes from RMC (ddmmyy; every RMC must agree
  with the time of day run forward, a midnight crossing adding a day) or from ``--date YYYY-MM-DD``,
  the UTC date of the log's first epoch.  Header stamp = the fix's UTC epoch time in ns (a log has no
  receive time; the driver stamps at reception).
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .. import __version__
from ..atomic import atomic_directory
from ..bags import messages as bm
from ..bags import write_bag
from ..errors import UserError
from ..geodesy import as_datum
from ..models import samples as S
from ..models.samples import GpsSamples
from ..runs import check_name
from ..yamlio import dump_yaml
from .drive import (
    BASE_FRAME,
    SIDECAR,
    SUMMARY,
    TOPICS,
    ImportedRun,
    ImportResult,
    overlap_note,
    plain_values,
    windows,
)

SENTENCES = ("GGA", "RMC", "GST", "VTG")
DAY_NS = 86_400 * 10**9
# GGA fix quality -> (NavSatStatus.status, name, nmea_navsat_driver's default epe in m)
QUALITY = {
    0: (S.STATUS_NO_FIX, "invalid", None),
    1: (S.STATUS_FIX, "GPS", 4.0),
    2: (S.STATUS_SBAS_FIX, "DGPS", 0.1),
    3: (S.STATUS_NO_FIX, "PPS", None),
    4: (S.STATUS_GBAS_FIX, "RTK fixed", 0.02),
    5: (S.STATUS_GBAS_FIX, "RTK float", 4.0),
    6: (S.STATUS_NO_FIX, "dead reckoning", None),
    7: (S.STATUS_NO_FIX, "manual input", None),
    8: (S.STATUS_NO_FIX, "simulator", None),
    9: (S.STATUS_GBAS_FIX, "WAAS", 3.0),
}
TALKER_SERVICE = {"GP": S.SERVICE_GPS, "QZ": S.SERVICE_GPS, "GL": S.SERVICE_GLONASS,
                  "GA": S.SERVICE_GALILEO, "BD": S.SERVICE_COMPASS, "GB": S.SERVICE_COMPASS}
ALTITUDE_FACTOR = 2.0   # --fix-covariance: σ_up = 2·σ_h (importer.covariance's policy)
COVARIANCE_SOURCES = ("fix_covariance", "gst", "gst_held", "hdop")
# A receiver may send GST slower than GGA (1 Hz GST, 10 Hz GGA): a fix without its own GST takes the
# latest one at most this old (nmea_navsat_driver keeps the last GST for ever).
GST_MAX_AGE_NS = 2 * 10**9
KNOTS = 1852.0 / 3600.0   # m/s per knot


class SentenceError(ValueError):
    """A line that is not a usable sentence: the reason is counted, the line left out."""


# --------------------------------------------------------------------------------- one sentence
def checksum(body: str) -> int:
    """XOR of the characters of a sentence between ``$`` and ``*``."""
    value = 0
    for char in body:
        value ^= ord(char)
    return value


def split_sentence(line: str) -> tuple:
    """(talker, type, fields after the address) of one line; SentenceError names what is wrong."""
    text = line.strip()
    start = text.find("$")
    if start < 0:
        raise SentenceError("not a sentence (no '$')")
    text = text[start + 1:]
    star = text.rfind("*")
    if star < 0:
        raise SentenceError("no checksum (a truncated line?)")
    body, given = text[:star], text[star + 1:star + 3]
    if len(given) != 2 or any(c not in "0123456789abcdefABCDEF" for c in given):
        raise SentenceError("truncated checksum")
    if int(given, 16) != checksum(body):
        raise SentenceError("bad checksum")
    fields = body.split(",")
    address = fields[0]
    if address.startswith("P") or len(address) != 5 or not address.isalnum():
        return "", address, fields[1:]   # proprietary or odd: ignored by type
    return address[:2], address[2:], fields[1:]


def _need(fields: list, count: int, kind: str) -> None:
    if len(fields) < count:
        raise SentenceError(f"truncated {kind} ({len(fields)} fields, expected {count})")


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SentenceError(f"{what} {text!r} is not a number") from None
    if not np.isfinite(value):
        raise SentenceError(f"{what} {text!r} is not finite")
    return value


def _optional(text: str, what: str) -> float:
    """A number, or NaN for an empty field."""
    return float("nan") if text.strip() == "" else _number(text, what)


def angle(value: str, hemisphere: str, degree_digits: int) -> float:
    """(d)ddmm.mmmm + hemisphere → signed decimal degrees (S and W negative)."""
    if len(value) < degree_digits + 2 or not value[:degree_digits + 2].isdigit():
        raise SentenceError(f"coordinate {value!r} is not {'d' * degree_digits}mm.mmmm")
    degrees = int(value[:degree_digits])
    minutes = _number(value[degree_digits:], "minutes")
    limit = 90 if degree_digits == 2 else 180
    if minutes >= 60.0 or degrees + minutes / 60.0 > limit:
        raise SentenceError(f"coordinate {value!r} is out of range")
    signs = {2: {"N": 1.0, "S": -1.0}, 3: {"E": 1.0, "W": -1.0}}[degree_digits]
    if hemisphere not in signs:
        raise SentenceError(f"hemisphere {hemisphere!r} (expected {' or '.join(signs)})")
    return signs[hemisphere] * (degrees + minutes / 60.0)


def latitude(value: str, hemisphere: str) -> float:
    return angle(value, hemisphere, 2)


def longitude(value: str, hemisphere: str) -> float:
    return angle(value, hemisphere, 3)


def time_of_day_ns(text: str) -> int:
    """hhmmss[.sss] → nanoseconds since UTC midnight (exact integers; second 60 is a leap second)."""
    whole, _dot, fraction = text.partition(".")
    if len(whole) != 6 or not whole.isdigit() or (fraction and not fraction.isdigit()):
        raise SentenceError(f"time {text!r} is not hhmmss.ss")
    hours, minutes, seconds = int(whole[:2]), int(whole[2:4]), int(whole[4:])
    if hours > 23 or minutes > 59 or seconds > 60:
        raise SentenceError(f"time {text!r} is out of range")
    nanos = int((fraction + "000000000")[:9]) if fraction else 0
    return ((hours * 60 + minutes) * 60 + seconds) * 10**9 + nanos


def date_ddmmyy(text: str) -> dt.date:
    """RMC ddmmyy → date (yy < 80 → 20yy, else 19yy: NMEA's two-digit year)."""
    if len(text) != 6 or not text.isdigit():
        raise SentenceError(f"date {text!r} is not ddmmyy")
    year = int(text[4:])
    try:
        return dt.date(2000 + year if year < 80 else 1900 + year, int(text[2:4]), int(text[:2]))
    except ValueError:
        raise SentenceError(f"date {text!r} is not a date") from None


def parse_gga(fields: list) -> dict:
    _need(fields, 11, "GGA")
    quality = fields[5].strip()
    if quality == "" or not quality.isdigit():
        raise SentenceError(f"fix quality {quality!r} is not an integer")
    record = {"tod_ns": time_of_day_ns(fields[0]), "quality": int(quality),
              "hdop": _optional(fields[7], "HDOP")}
    if record["quality"] == 0:
        record["position"] = None   # no fix: empty position fields are normal
        return record
    if "" in (fields[1].strip(), fields[3].strip()):
        raise SentenceError("empty position in a fix")
    altitude = fields[8].strip()
    if altitude == "":
        raise SentenceError("empty altitude in a fix")
    record["position"] = (latitude(fields[1], fields[2]), longitude(fields[3], fields[4]),
                          _number(altitude, "altitude"))
    record["geoid"] = _optional(fields[10], "geoid separation")
    return record


def parse_rmc(fields: list) -> dict:
    _need(fields, 9, "RMC")
    date = fields[8].strip()
    return {"tod_ns": time_of_day_ns(fields[0]), "valid": fields[1] == "A",
            "date": date_ddmmyy(date) if date else None,
            "speed_m_s": _optional(fields[6], "speed") * KNOTS}


def parse_gst(fields: list) -> dict:
    _need(fields, 8, "GST")
    sigma = tuple(_optional(fields[i], name) for i, name in ((6, "lon sigma"), (5, "lat sigma"),
                                                            (7, "alt sigma")))
    return {"tod_ns": time_of_day_ns(fields[0]), "sigma_enu": sigma}


def parse_vtg(fields: list) -> dict:
    _need(fields, 7, "VTG")
    return {"speed_m_s": _optional(fields[6], "speed km/h") / 3.6}


PARSERS = {"GGA": parse_gga, "RMC": parse_rmc, "GST": parse_gst, "VTG": parse_vtg}


# ------------------------------------------------------------------------------------ the whole log
@dataclass
class Epoch:
    line: int
    tod_ns: int
    talker: str = ""
    gga: Optional[dict] = None
    rmc: Optional[dict] = None
    gst: Optional[dict] = None
    vtg: Optional[dict] = None
    day: int = 0    # midnight crossings since the first epoch


@dataclass
class LogLines:
    """What reading a log found: epochs in file order and the counts the import reports."""

    path: str
    epochs: list
    lines: int = 0
    sentences: dict = field(default_factory=dict)   # type -> count of valid ones read
    ignored: dict = field(default_factory=dict)     # other sentence types -> count
    bad: dict = field(default_factory=dict)         # reason -> [count, first line]

    def reject(self, reason: str, line: int) -> None:
        entry = self.bad.setdefault(reason, [0, line])
        entry[0] += 1

    def bad_summary(self) -> str:
        if not self.bad:
            return "no bad lines"
        parts = [f"{count} {reason} (first at line {line})" for reason, (count, line) in self.bad.items()]
        return f"{sum(c for c, _l in self.bad.values())} bad lines: " + "; ".join(parts)


def _reason_key(error: SentenceError) -> str:
    """Counted reasons are the message up to its specific values ('time ... is not hhmmss.ss')."""
    text = str(error)
    for general in ("bad checksum", "no checksum (a truncated line?)", "truncated checksum",
                    "not a sentence"):
        if text.startswith(general):
            return general
    if text.startswith("truncated"):
        return text.split(" (")[0]
    if text.startswith("empty"):
        return text
    return "unparsable " + text.split(" '")[0].split(" (")[0]   # "unparsable time", not each value


def read_lines(path) -> LogLines:
    """Every sentence of a log, grouped into epochs by time of day (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file (expected an NMEA 0183 log)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc})") from None
    log = LogLines(str(path), [])
    current: Optional[Epoch] = None
    for number, line_bytes in enumerate(raw.splitlines(), start=1):
        log.lines = number
        text = line_bytes.decode("ascii", errors="replace")
        if not text.strip():
            continue
        try:
            talker, kind, fields = split_sentence(text)
            if kind not in PARSERS:
                log.ignored[kind or "?"] = log.ignored.get(kind or "?", 0) + 1
                continue
            record = PARSERS[kind](fields)
        except SentenceError as exc:
            log.reject(_reason_key(exc), number)
            continue
        log.sentences[kind] = log.sentences.get(kind, 0) + 1
        if "tod_ns" in record and (current is None or record["tod_ns"] != current.tod_ns):
            current = Epoch(number, record["tod_ns"])
            log.epochs.append(current)
        if current is None:
            log.reject(f"{kind} before any timed sentence", number)
            continue
        name = kind.lower()
        if getattr(current, name) is not None:
            log.reject(f"repeated {kind} in one epoch", number)
            continue
        record["line"] = number
        setattr(current, name, record)
        if kind == "GGA":
            current.talker = talker
    return log


def _days(log: LogLines) -> list:
    """Midnight crossings: the time of day running backwards by more than 12 h is the next day; by
    less, an epoch out of order (counted, dropped).  Returns the epochs kept."""
    kept, day, previous = [], 0, None
    for epoch in log.epochs:
        if previous is not None and epoch.tod_ns < previous:
            if previous - epoch.tod_ns > DAY_NS // 2:
                day += 1
            else:
                log.reject("time of day running backwards", epoch.line)
                continue
        epoch.day = day
        previous = epoch.tod_ns
        kept.append(epoch)
    return kept


def day_zero(log: LogLines, epochs: list, date: Optional[dt.date]) -> dt.date:
    """The UTC date of the first epoch's day: from every RMC date (they must agree with the time of
    day run forward) or ``--date``; an error naming the line when they disagree or neither exists."""
    found = None
    for epoch in epochs:
        if epoch.rmc is None or epoch.rmc["date"] is None:
            continue
        zero = epoch.rmc["date"] - dt.timedelta(days=epoch.day)
        if found is None:
            found = (zero, epoch)
        elif zero != found[0]:
            first = found[1].rmc
            raise UserError(f"{log.path}: line {epoch.rmc['line']}: RMC date {epoch.rmc['date']} does not "
                            f"follow from the date at line {first['line']} ({first['date']}) and the time of "
                            "day in between (a gap of a day or more in the log?)")
    if date is not None:
        if found is not None and found[0] != date:
            raise UserError(f"--date {date}: the log's RMC at line {found[1].rmc['line']} says the first "
                            f"epoch is on {found[0]}")
        return date
    if found is None:
        raise UserError(f"{log.path}: no RMC sentence with a date: give --date YYYY-MM-DD (the UTC date "
                        "of the log's first epoch)")
    return found[0]


@dataclass
class NmeaFixes:
    """The usable fixes of one log: UTC stamps (ns), WGS-84 lat/lon (deg), ellipsoidal height (m),
    NavSatStatus status/service, per-fix ENU 1-σ (m) and covariance type, and where each came from."""

    stamp_ns: np.ndarray
    latitude: np.ndarray
    longitude: np.ndarray
    altitude: np.ndarray
    status: np.ndarray
    service: np.ndarray
    quality: np.ndarray
    sigma: np.ndarray               # (N, 3) east, north, up
    covariance_type: np.ndarray
    covariance_source: np.ndarray   # index into COVARIANCE_SOURCES
    lines: np.ndarray               # the GGA's line number

    def select(self, rows) -> NmeaFixes:
        return NmeaFixes(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))


def fix_sigma(quality: int, hdop: float, gst: Optional[dict], fix_covariance: Optional[float]) -> tuple:
    """((σ_e, σ_n, σ_u) m, NavSatFix covariance type, source) of one fix, or None when nothing gives
    one (module docstring: --fix-covariance, else GST, else the driver's HDOP·epe)."""
    if fix_covariance is not None:
        return ((fix_covariance, fix_covariance, ALTITUDE_FACTOR * fix_covariance),
                S.COVARIANCE_TYPE_APPROXIMATED, "fix_covariance")
    if gst is not None:
        sigma = gst["sigma_enu"]
        if all(np.isfinite(s) and s > 0 for s in sigma):
            return tuple(sigma), S.COVARIANCE_TYPE_DIAGONAL_KNOWN, "gst"
    epe = QUALITY[quality][2]
    if np.isfinite(hdop) and hdop > 0 and epe is not None:
        return ((hdop * epe, hdop * epe, 2.0 * hdop * 2.0 * epe), S.COVARIANCE_TYPE_APPROXIMATED, "hdop")
    return None


def _fix_rows(log: LogLines, epochs: list, midnight_ns: int, fix_covariance) -> tuple:
    """(rows of the usable fixes, {quality: count} of all GGA, count of fixes without geoid N)."""
    rows, qualities, no_geoid = [], {}, 0
    held = None   # (epoch time ns, GST) of the latest GST with every σ > 0
    for epoch in epochs:
        now = epoch.day * DAY_NS + epoch.tod_ns
        if epoch.gst is not None and all(np.isfinite(s) and s > 0 for s in epoch.gst["sigma_enu"]):
            held = (now, epoch.gst)
        gga = epoch.gga
        if gga is None:
            continue
        qualities[gga["quality"]] = qualities.get(gga["quality"], 0) + 1
        status = QUALITY.get(gga["quality"], (S.STATUS_NO_FIX, "", None))[0]
        if status == S.STATUS_NO_FIX or gga["position"] is None:
            continue
        gst = held[1] if held is not None and now - held[0] <= GST_MAX_AGE_NS else None
        sigma = fix_sigma(gga["quality"], gga["hdop"], gst, fix_covariance)
        if sigma is not None and sigma[2] == "gst" and gst is not epoch.gst:
            sigma = (sigma[0], sigma[1], "gst_held")
        if sigma is None:
            raise UserError(f"{log.path}: line {epoch.line}: no GST and no HDOP for this fix: give "
                            "--fix-covariance SIGMA (the receiver's 1-sigma horizontal accuracy, m)")
        lat, lon, msl = gga["position"]
        geoid = gga["geoid"]
        if not np.isfinite(geoid):
            no_geoid += 1
            geoid = 0.0
        stamp = midnight_ns + epoch.day * DAY_NS + epoch.tod_ns
        rows.append((stamp, lat, lon, msl + geoid, status,
                     TALKER_SERVICE.get(epoch.talker, S.SERVICE_GPS), gga["quality"], sigma[0], sigma[1],
                     COVARIANCE_SOURCES.index(sigma[2]), epoch.line))
    return rows, qualities, no_geoid


@dataclass
class NmeaLog:
    """One log read: its fixes, the counts and the record import.yaml keeps."""

    path: str
    fixes: NmeaFixes
    record: dict


def read_log(path, date: Optional[dt.date] = None, fix_covariance: Optional[float] = None,
             fix_covariance_scale: float = 1.0) -> NmeaLog:
    """The usable fixes of an NMEA log and what was found in it; an error only when none is usable."""
    if fix_covariance is not None and not (np.isfinite(fix_covariance) and fix_covariance > 0):
        raise UserError(f"--fix-covariance: expected a standard deviation > 0 m, got {fix_covariance!r}")
    log = read_lines(path)
    epochs = _days(log)
    with_fix = [e for e in epochs if e.gga is not None and e.gga["position"] is not None
                and QUALITY.get(e.gga["quality"], (S.STATUS_NO_FIX,))[0] != S.STATUS_NO_FIX]
    if not with_fix:
        first = min((line for _c, line in log.bad.values()), default=None)
        where = f"line {first}: " if first is not None else ""
        raise UserError(f"{log.path}: {where}no usable GGA fix in {log.lines} lines ({log.bad_summary()}; "
                        f"GGA read: {log.sentences.get('GGA', 0)}, with a fix: 0)")
    zero = day_zero(log, epochs, date)
    midnight_ns = int(dt.datetime(zero.year, zero.month, zero.day, tzinfo=dt.timezone.utc).timestamp()) \
        * 10**9
    rows, qualities, no_geoid = _fix_rows(log, epochs, midnight_ns, fix_covariance)
    columns = list(zip(*rows))
    stamp = np.array(columns[0], dtype=np.int64)
    if (np.diff(stamp) <= 0).any():   # cannot happen after _days; a guard for the bag's order
        raise UserError(f"{log.path}: fix times are not increasing")
    sigma = np.array(columns[7], dtype=float) * float(fix_covariance_scale)
    fixes = NmeaFixes(stamp, np.array(columns[1]), np.array(columns[2]), np.array(columns[3]),
                      np.array(columns[4], dtype=np.int8), np.array(columns[5], dtype=np.uint16),
                      np.array(columns[6], dtype=int), sigma, np.array(columns[8], dtype=np.uint8),
                      np.array(columns[9], dtype=int), np.array(columns[10], dtype=int))
    record = _record(log, fixes, qualities, no_geoid, zero, date is not None, fix_covariance_scale, epochs)
    return NmeaLog(log.path, fixes, record)


def _speeds(epochs: list) -> list:
    values = [e.vtg["speed_m_s"] for e in epochs if e.vtg is not None]
    values += [e.rmc["speed_m_s"] for e in epochs if e.rmc is not None and e.vtg is None]
    return [v for v in values if np.isfinite(v)]


def _record(log: LogLines, fixes: NmeaFixes, qualities: dict, no_geoid: int, zero: dt.date,
            date_given: bool, scale: float, epochs: list) -> dict:
    sources = {name: int((fixes.covariance_source == i).sum()) for i, name in enumerate(COVARIANCE_SOURCES)}
    speeds = _speeds(epochs)
    t = fixes.stamp_ns * 1e-9
    return {
        "format": "nmea", "source": str(Path(log.path).resolve()),
        "lines": log.lines, "sentences": dict(sorted(log.sentences.items())),
        "ignored_sentences": dict(sorted(log.ignored.items())),
        "bad_lines": {reason: {"count": count, "first_line": line}
                      for reason, (count, line) in log.bad.items()},
        "fix_quality": {f"{q} {QUALITY.get(q, (0, 'unknown'))[1]}": n for q, n in sorted(qualities.items())},
        "fixes": int(len(t)), "fixes_without_geoid_separation": no_geoid,
        "rate_hz": round(float((len(t) - 1) / (t[-1] - t[0])), 3) if len(t) > 1 else None,
        "clock": {"source": "UTC time of day (GGA/RMC/GST) + date",
                  "date": f"{zero} ({'--date' if date_given else 'RMC'}), the first epoch's UTC date",
                  "stamps": "UTC epoch ns of the fix (the log has no receive time)"},
        "altitude": "ellipsoidal: GGA altitude above mean sea level + geoid separation N",
        "frames": {"gps": "base_link (lever arm 0)", "world": "ENU at the datum"},
        "gnss": {"policy": "+".join(name for name, n in sources.items() if n),
                 "covariance_sources": sources, "scale": float(scale),
                 "description": "per fix: --fix-covariance, else GST sigma of the epoch or held <= 2 s "
                                "(diagonal_known), else nmea_navsat_driver's hdop*epe (approximated)",
                 "sigma_m": {"median": [round(float(v), 4) for v in np.median(fixes.sigma, axis=0)],
                             "min": [round(float(v), 4) for v in np.min(fixes.sigma, axis=0)],
                             "max": [round(float(v), 4) for v in np.max(fixes.sigma, axis=0)]}},
        "speed_over_ground_m_s": ({"max": round(float(max(speeds)), 3),
                                   "median": round(float(np.median(speeds)), 3)} if speeds else None),
        "imu": None, "truth": None,
    }


def parse_date(text) -> Optional[dt.date]:
    """``--date YYYY-MM-DD`` → date (None passes through)."""
    if text is None or isinstance(text, dt.date):
        return text
    try:
        return dt.date.fromisoformat(str(text))
    except ValueError:
        raise UserError(f"--date: expected YYYY-MM-DD, got {text!r}") from None


# --------------------------------------------------------------------------------------- writing
def _gps_samples(fixes: NmeaFixes):
    n = len(fixes.stamp_ns)
    covariance = np.zeros((n, 9))
    covariance[:, [0, 4, 8]] = fixes.sigma ** 2
    return GpsSamples(stamp_ns=fixes.stamp_ns, receive_ns=fixes.stamp_ns, latitude=fixes.latitude,
                      longitude=fixes.longitude, altitude=fixes.altitude, status=fixes.status,
                      service=fixes.service, position_covariance=covariance,
                      position_covariance_type=fixes.covariance_type, enu_error=np.zeros((n, 3)),
                      frame_id=BASE_FRAME)


def import_logs(logs, out, window: Optional[float] = None, stride: Optional[float] = None,
                scenario: Optional[str] = None, date=None, fix_covariance: Optional[float] = None,
                fix_covariance_scale: float = 1.0, datum=None, overwrite: bool = False,
                storage: str = "sqlite3"):
    """Read NMEA log(s) and write ``OUT/<scenario>/run_<kk>/`` bags with ``/fix`` only + import.yaml
    (the layout of ``drive.write_runs``; no /imu, no truth).  Returns an ``ImportResult``."""
    started = time.perf_counter()
    sources = [logs] if isinstance(logs, (str, Path)) else list(logs)
    if not (isinstance(fix_covariance_scale, (int, float)) and 0 < fix_covariance_scale < float("inf")):
        raise UserError(f"--fix-covariance-scale: expected a factor > 0, got {fix_covariance_scale!r}")
    name = scenario if scenario is not None else Path(str(sources[0])).stem
    check_name(name, "--scenario")
    date = parse_date(date)
    datum = None if datum is None else as_datum(datum, "--datum")
    read = [read_log(src, date, fix_covariance, fix_covariance_scale) for src in sources]
    plan = []
    for log in read:
        t = log.fixes.stamp_ns * 1e-9
        if t[-1] - t[0] < 2.0:
            raise UserError(f"{log.path}: the usable fixes span {t[-1] - t[0]:.1f} s; a run needs at "
                            "least 2 s")
        for lo, hi in windows(float(t[0]), float(t[-1]), window, stride):
            plan.append((log, lo, hi))
    if len(plan) > 1000:
        raise UserError(f"--window/--stride make {len(plan)} runs; at most 1000 (choose a longer stride)")
    note = overlap_note(window, stride).replace("truth, GNSS and IMU overlap", "the log has fixes")
    runs, summary_runs = [], []
    with atomic_directory(out, overwrite=overwrite) as temp:
        folder = Path(temp) / name
        folder.mkdir(parents=True)
        for k, (log, lo, hi) in enumerate(plan):
            run = f"run_{k:02d}" if len(plan) <= 100 else f"run_{k:03d}"
            t = log.fixes.stamp_ns * 1e-9
            fixes = log.fixes.select((t >= lo - 1e-9) & (t <= hi + 1e-9))
            if len(fixes.stamp_ns) < 2:
                raise UserError(f"{log.path}: the run {lo:.3f}..{hi:.3f} s holds {len(fixes.stamp_ns)} "
                                "fixes; a run needs at least 2")
            first = log.fixes
            origin = datum if datum is not None else (float(first.latitude[0]), float(first.longitude[0]),
                                                      float(first.altitude[0]))
            counts = {TOPICS["gps"]: len(fixes.stamp_ns)}
            sidecar = {
                "imported": True, "what": "a GNSS receiver's NMEA log imported by sim2real-eval import",
                "scenario": name, "run": run, "source": log.record["source"], "format": "nmea",
                "datum": [float(v) for v in origin], "window_s": [round(lo, 6), round(hi, 6)],
                "stamp_offset_ns": 0, "windows": note, "frames": log.record["frames"],
                "clock": log.record["clock"], "gnss": log.record["gnss"], "imu": None, "truth": None,
                "messages": counts, "version": __version__,
            }
            records = bm.navsatfix_cdr(_gps_samples(fixes), TOPICS["gps"])
            write_bag(folder / run, sorted((tuple(r) for r in records), key=lambda r: r[0]), storage=storage,
                      extra_files={SIDECAR: dump_yaml(plain_values(sidecar))})
            runs.append(ImportedRun(str(Path(out) / name / run), log.record["source"], lo, hi, counts))
            summary_runs.append({"run": run, "source": log.record["source"],
                                 "window_s": [round(lo, 6), round(hi, 6)], "messages": counts})
        summary = {"scenario": name, "runs": summary_runs, "windows": note, "window_s": window,
                   "stride_s": stride if stride is not None else window,
                   "drives": [log.record for log in read], "version": __version__}
        (Path(temp) / SUMMARY).write_text(dump_yaml(plain_values(summary)), encoding="utf-8")
    return ImportResult(str(out), name, tuple(runs), summary, time.perf_counter() - started)
