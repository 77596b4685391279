"""Judge.run_blocks: messages handed over in columns (an in-memory run) give what the same messages as CDR
records give — byte for byte, across chunk boundaries and receive-time ties — and the model samples'
blocks (judge.config.sensor_block) are what the judge decodes from their CDR bytes."""
from __future__ import annotations

import numpy as np
import pytest

from sim2real_eval import art
from sim2real_eval.bags import get_typestore
from sim2real_eval.bags import messages as bag_messages
from sim2real_eval.judge import Judge, SensorBlock, load_ekf_params, load_navsat_params, runner
from sim2real_eval.judge.config import sensor_block
from sim2real_eval.judge.input_rows import cdr_columns
from sim2real_eval.judge.synthetic import ART_STATIC_TFS, art_like_samples
from sim2real_eval.resources import config_path

SERIES_FIELDS = ("stamp_ns", "position", "orientation", "linear_velocity")


def _judge():
    return Judge(load_ekf_params(config_path("ekf_art_iros2024.yaml")),
                 load_navsat_params(config_path("navsat_art_iros2024.yaml")), ART_STATIC_TFS)


def _samples():
    # GPS received with no latency: its receive times tie with IMU messages (a 10 Hz tick is a 100 Hz one)
    return art_like_samples(duration=12.0, heading_rate=0.05, seed=3, gps_latency=0.0)


def _records(gps, imu) -> list:
    records = list(bag_messages.navsatfix_cdr(gps, art.TOPICS["gps"]))
    records += bag_messages.imu_cdr(imu, art.TOPICS["imu"])
    return sorted(records, key=lambda record: record[0])  # stable: /fix before /imu at equal times


def _assert_same(a, b):
    for name in SERIES_FIELDS:
        assert np.array_equal(getattr(a.filtered, name), getattr(b.filtered, name)), name
    assert np.array_equal(a.gps_odometry.position, b.gps_odometry.position)
    for name in ("inputs", "dropped", "published", "gps_published", "warnings", "lost"):
        assert getattr(a, name) == getattr(b, name), name


@pytest.mark.parametrize("chunk", [runner.CHUNK, 97])
def test_blocks_give_the_records_result(monkeypatch, chunk):
    monkeypatch.setattr(runner, "CHUNK", chunk)
    imu, gps = _samples()
    records = _records(gps, imu)
    assert len({record[0] for record in records}) < len(records)  # ties present
    blocks = [sensor_block(gps), sensor_block(imu)]
    by_records, by_blocks = _judge().run(records), _judge().run_blocks(blocks)
    assert by_records.published > 100
    _assert_same(by_records, by_blocks)


def test_a_models_block_is_what_the_judge_decodes_from_its_bytes():
    imu, gps = _samples()
    store = get_typestore()
    for samples, cdr, topic in ((imu, bag_messages.imu_cdr, art.TOPICS["imu"]),
                                (gps, bag_messages.navsatfix_cdr, art.TOPICS["gps"])):
        block = sensor_block(samples)
        records = cdr(samples, topic)
        decoded = cdr_columns(store, topic, records[0].msgtype, [record[3] for record in records])
        assert block.topic == topic and block.msgtype == records[0].msgtype
        assert np.array_equal(block.recv_ns, [record[0] for record in records])
        for name in ("stamp", "frame", "child", "values"):
            assert np.array_equal(getattr(block.columns, name), getattr(decoded, name)), name
        assert (block.columns.frame_names, block.columns.child_names) == (decoded.frame_names,
                                                                          decoded.child_names)


def test_one_block_per_topic():
    imu, gps = _samples()
    block = sensor_block(imu)
    with pytest.raises(ValueError, match="one block per topic"):
        _judge().run_blocks([block, SensorBlock(block.recv_ns, block.topic, block.msgtype, block.columns)])


def test_a_shared_block_is_not_changed_by_a_run():
    """The judge adds UTM values to a fix's columns in place: a block judged by several runs (a bag's
    real GPS: its real run and the floor's draws) must come out as it went in."""
    imu, gps = _samples()
    blocks = [sensor_block(gps), sensor_block(imu)]
    before = blocks[0].columns.values.copy()
    first = _judge().run_blocks(blocks)
    assert np.array_equal(blocks[0].columns.values, before)
    _assert_same(first, _judge().run_blocks(blocks))
