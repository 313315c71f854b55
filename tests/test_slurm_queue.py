"""squeue's lines read as a run's jobs: which are over, which Slurm will never start."""

from __future__ import annotations

from nb2cwl.slurm_queue import queue_states

SQUEUE = "".join(f"{job:<30}{state:<20}{partition:<40}{reason}\n" for job, state, partition, reason
                 in [("41", "PENDING", "debug", "PartitionConfig"),
                     ("42", "PENDING", "debug", "Resources"),
                     ("43", "COMPLETING", "debug", "None"),
                     ("44", "PENDING", "gpu", "ReqNodeNotAvail, UnavailableNodes:node2"),
                     ("45", "PENDING", "gpu", "BadConstraints")])


def test_only_a_configuration_reason_means_never() -> None:
    jobs = {job.job: job for job in queue_states(SQUEUE)}
    assert [j for j, job in jobs.items() if job.never_starts] == ["41"]
    assert [j for j, job in jobs.items() if job.completing] == ["43"]
    assert jobs["44"].reason == "ReqNodeNotAvail, UnavailableNodes:node2"  # it may yet run
    assert not jobs["45"].never_starts  # the features may be on drained nodes
    assert jobs["41"].refusal() == (
        "Slurm will not start job 41: it is pending with reason PartitionConfig (it asks for "
        "more nodes, cores or memory than partition debug offers), so it was cancelled")
