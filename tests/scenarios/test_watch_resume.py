"""A watch dropped and resumed, on the embedded store and on the real kube-apiserver:
the informer starts its next watch from the last version it saw and hears what it
missed, a deletion included, without listing again (the server still holds that
history). Beyond the history, see tests/unit/test_informer_relist.py (embedded, a
store of 20 events) and tests/cluster/test_outages.py (the real server, restarted)."""

from __future__ import annotations

from state_controller.cluster.interface import Cluster
from testbed.scenarios import NS
from testbed.watch_outage import WatchOutage, missed, secrets_informer, told_what_was_missed
from tests.conftest import wait_for


def test_a_dropped_watch_resumes_where_it_stopped_and_hears_what_it_missed(
    cluster: Cluster,
) -> None:
    outage = WatchOutage(cluster)
    informer, seen = secrets_informer(outage, NS, relist_delay=0.05)
    informer.start()
    try:
        assert informer.wait_synced(30)
        wait_for(lambda: len(outage.watches) == 1, what="the first watch")
        wait_for(lambda: {f"{NS}/{n}" for n in "abc"} <= set(informer.keys()), what="a, b, c")
        relists = informer.relists
        seen.clear()
        outage.begin()
        missed(cluster, NS, 5)
        outage.end()
        told_what_was_missed(cluster, NS, informer, seen)
        assert len(outage.watches) == 2  # one new watch...
        assert informer.relists == relists  # ...from where the first stopped: no list
    finally:
        outage.end()
        informer.stop()
