"""The OpenSearch dev cluster (scripts/opensearch-dev) is real and fit for refind's OpenSearch engine: a green
node, refind's analyzer chain giving the same terms as refind's own Lucene analyzer, and a 3-node cluster
whose replicated index keeps every document searchable after one node is killed with SIGKILL.

Real JVMs on loopback, the official opensearch-py client; no mocks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import refind
from tests.opensearch_helpers import (
    REQUIRE_ENV,
    SCRIPT,
    DevCluster,
    require_tools,
    start_cluster,
    unavailable_reason,
)

pytestmark = pytest.mark.slow  # OpenSearch clusters of their own: make test, not make check

VERSION = "2.19.6"

# refind's Lucene chain (refind/store/lucene.py, ANALYZER_NAME) in OpenSearch's names. OpenSearch has no
# filter called english_possessive: Lucene's EnglishPossessiveFilter is the stemmer "possessive_english".
REFIND_ANALYSIS = {
    "char_filter": {"colon_split": {"type": "pattern_replace", "pattern": ":", "replacement": " "}},
    "filter": {
        "english_possessive": {"type": "stemmer", "language": "possessive_english"},
        "english_stop": {"type": "stop", "stopwords": "_english_"},
    },
    "analyzer": {
        "refind": {
            "type": "custom",
            "char_filter": ["colon_split"],
            "tokenizer": "standard",
            "filter": [
                "cjk_width",
                "lowercase",
                "cjk_bigram",
                "english_possessive",
                "english_stop",
                "porter_stem",
            ],
        }
    },
}

TEXTS = [
    "The runners were running to John's houses",
    "我上个月在杭州买了一只橘猫",
    "title:kayak booked for Ｔｏｋｙｏ (東京) on 2024-03-05",
    "Bob's dog isn't a cat; it's THE dogs' toy",
]


# opensearch-py reads a `timeout=` argument as its own socket timeout unless `request_timeout=` is given too;
# with both, `timeout` goes to the server (how long cluster health may wait).


def running(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def tokens(client: Any, index: str, text: str) -> list[str]:
    return [
        t["token"]
        for t in client.indices.analyze(index=index, body={"analyzer": "refind", "text": text})["tokens"]
    ]


# ------------------------------------------------------------------------------------------------ one node


def test_single_node_is_green(opensearch: DevCluster) -> None:
    with opensearch.client() as client:
        health = client.cluster.health(wait_for_status="green", timeout="30s", request_timeout=90)
        assert health["status"] == "green", health
        assert health["number_of_nodes"] == 1
        assert client.info()["version"]["number"] == VERSION
        plugins = {p["component"] for p in client.cat.plugins(format="json")}
        assert not any("security" in p for p in plugins), plugins
    status = opensearch.status()
    assert status["health"]["status"] == "green"
    assert status["nodes"][0]["running"] and status["nodes"][0]["rss_mb"] > 50


def test_refind_analyzer_chain(opensearch: DevCluster) -> None:
    index = "analyzer-check"
    with opensearch.client() as client:
        client.indices.create(
            index=index, body={"settings": {"number_of_shards": 1, "analysis": REFIND_ANALYSIS}}
        )
        try:
            english = tokens(client, index, "The runners were running to John's houses")
            # "were" is not in Lucene's _english_ stop set (a, an, and, are, as, at, be, ..., was, will, with)
            assert english == ["runner", "were", "run", "john", "hous"]
            cjk = tokens(client, index, "我上个月在杭州买了一只橘猫")
            assert "杭州" in cjk and "橘猫" in cjk
            assert cjk == [
                "我上",
                "上个",
                "个月",
                "月在",
                "在杭",
                "杭州",
                "州买",
                "买了",
                "了一",
                "一只",
                "只橘",
                "橘猫",
            ]
            assert tokens(client, index, "title:kayak ＡＢＣ") == [
                "titl",
                "kayak",
                "abc",
            ]  # colon split, width
        finally:
            client.indices.delete(index=index)


def test_analyzer_matches_refinds_lucene_chain(opensearch: DevCluster) -> None:
    """The reference: refind's embedded Lucene analyzer gives the same terms for the same texts."""
    index = "analyzer-parity"
    mem = refind.Memory.in_memory()
    try:
        with opensearch.client() as client:
            client.indices.create(
                index=index, body={"settings": {"number_of_shards": 1, "analysis": REFIND_ANALYSIS}}
            )
            try:
                for text in TEXTS:
                    assert tokens(client, index, text) == mem.store.analyze(text), text
            finally:
                client.indices.delete(index=index)
    finally:
        mem.close()


def test_a_start_that_times_out_reports_the_log_and_leaves_no_process(tmp_path: Path) -> None:
    require_tools()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "start", "--dir", str(tmp_path), "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "the cluster was not green within 1 s (last health:" in done.stderr
    assert f"{tmp_path / 'node-0.log'}:\n    " in done.stderr  # the log's last lines follow, indented
    pid = json.loads((tmp_path / "cluster.json").read_text())["nodes"][0]["pid"]
    assert not running(pid)


def test_missing_java_or_maven_skips_or_fails_as_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no java, javac or mvn
    monkeypatch.delenv("JAVA_HOME", raising=False)
    reason = unavailable_reason()
    assert reason is not None and "java, javac, mvn not found" in reason
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="mvn not found"):
        require_tools()
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_ENV}=1 requires it"):
        require_tools()


# --------------------------------------------------------------------------------------------- three nodes


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    with start_cluster(tmp_path_factory.mktemp("os3"), nodes=3) as cluster:
        yield cluster


def test_three_nodes_form_one_green_cluster(cluster3: DevCluster) -> None:
    assert len(cluster3.urls) == 3
    for i in range(3):
        with cluster3.client(nodes=[i]) as client:
            health = client.cluster.health()
            assert health["status"] == "green" and health["number_of_nodes"] == 3, health
            assert health["cluster_name"] == cluster3.info["cluster_name"]
    with cluster3.client(nodes=[0]) as client:
        names = sorted(n["name"] for n in client.cat.nodes(format="json"))
        assert names == ["node-0", "node-1", "node-2"]
        assert len(client.cat.cluster_manager(format="json")) == 1


def searchable_ids(client: Any, index: str, n: int) -> set[str]:
    """The ids that a search for each document's own word finds (one msearch of ``n`` match queries)."""
    lines: list[dict[str, Any]] = []
    for i in range(n):
        lines += [{"index": index}, {"query": {"match": {"text": f"word{i}"}}, "size": 2}]
    found = set()
    for i, response in enumerate(client.msearch(body=lines)["responses"]):
        assert response.get("status", 200) == 200 and response["_shards"]["failed"] == 0, response
        hits = [h["_id"] for h in response["hits"]["hits"]]
        assert hits == [f"doc-{i}"], (i, hits)
        found.update(hits)
    return found


def test_replicated_index_survives_kill_9(cluster3: DevCluster) -> None:
    index, n = "messages", 300
    ids = {f"doc-{i}" for i in range(n)}
    with cluster3.client() as client:
        client.indices.create(
            index=index, body={"settings": {"number_of_shards": 3, "number_of_replicas": 1}}
        )
        health = client.cluster.health(
            index=index, wait_for_status="green", timeout="60s", request_timeout=90
        )
        assert health["status"] == "green" and health["active_shards"] == 6, health
        body: list[dict[str, Any]] = []
        for i in range(n):
            body += [
                {"index": {"_index": index, "_id": f"doc-{i}"}},
                {"text": f"word{i} shared chat message"},
            ]
        result = client.bulk(body=body, refresh="wait_for")
        assert not result["errors"], [item for item in result["items"] if "error" in item["index"]][:3]
        # refresh=wait_for: visible on return, no explicit refresh
        assert client.count(index=index)["count"] == n
        assert searchable_ids(client, index, n) == ids
        manager = client.cat.cluster_manager(format="json")[0]["node"]

    # kill -9 the elected cluster manager: a new election, replicas promoted to primaries
    victim = int(manager.removeprefix("node-"))
    cluster3.kill(victim, "KILL")
    survivors = [i for i in range(3) if i != victim]
    status = cluster3.status()
    assert [node["running"] for node in status["nodes"]] == [i != victim for i in range(3)]

    with cluster3.client(nodes=survivors) as client:
        deadline = time.monotonic() + 120
        while True:
            health = client.cluster.health(
                wait_for_nodes="2", wait_for_status="yellow", timeout="30s", request_timeout=90
            )
            if not health["timed_out"] and health["number_of_nodes"] == 2:
                break
            assert time.monotonic() < deadline, health
        assert health["status"] in ("yellow", "green"), health
        assert health["active_primary_shards"] == 3, health
        assert client.count(index=index)["count"] == n
        assert searchable_ids(client, index, n) == ids
        assert client.cat.cluster_manager(format="json")[0]["node"] != manager

    # stop leaves no process: the survivors get SIGTERM and exit
    pids = [node["pid"] for node in cluster3.nodes]
    cluster3.stop()
    assert not [pid for pid in pids if running(pid)]
    assert cluster3.status()["health"] is None
