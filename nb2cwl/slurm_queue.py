"""What squeue says of a run's Slurm jobs while StreamFlow waits for them.

StreamFlow polls squeue until a job leaves the queue. Two states need more than that:

- COMPLETING: the batch script has ended, and with it the step; Slurm is only tidying the nodes
  up, so the step is over;
- PENDING for a reason Slurm's own configuration makes permanent. A cluster without
  `EnforcePartLimits` accepts a job its partition can never run (more nodes, cores, memory or
  time than the partition allows) and leaves it pending for ever, reason `PartitionConfig` or
  `PartitionTimeLimit`. Sites that set
  `EnforcePartLimits` refuse such a job at sbatch instead; nb2cwl makes both look the same:
  the job is cancelled and the run fails with Slurm's reason.

A job pending for any other reason (`Resources`, `Priority`, a node that is down, features
only drained nodes have: `BadConstraints`) waits, as it would in Slurm: it can still start.
"""

from __future__ import annotations

from dataclasses import dataclass

#: squeue's output format for `queue_states`: id, state, partition, reason (fixed widths;
#: no character a shell would read: StreamFlow passes the command through one)
SQUEUE_FORMAT = "JobID:30,State:20,Partition:40,Reason:100"

#: pending reasons that no change in the cluster's load can end, and what each means
NEVER_STARTS: dict[str, str] = {
    "PartitionConfig": "it asks for more nodes, cores or memory than partition {partition} "
                       "offers",
    "PartitionTimeLimit": "it asks for more time than partition {partition} allows",
}


@dataclass(frozen=True)
class QueuedJob:
    """One line of squeue: a job of the run, its state and Slurm's reason."""

    job: str
    state: str
    partition: str
    reason: str

    @property
    def completing(self) -> bool:
        return self.state == "COMPLETING"

    @property
    def never_starts(self) -> bool:
        return self.state == "PENDING" and self.reason in NEVER_STARTS

    def refusal(self) -> str:
        """The one line a user reads for a job that will never start."""
        meaning = NEVER_STARTS[self.reason].format(partition=self.partition or "(default)")
        return (f"Slurm will not start job {self.job}: it is pending with reason "
                f"{self.reason} ({meaning}), so it was cancelled")


def queue_states(squeue_output: str) -> list[QueuedJob]:
    """The jobs in the output of `squeue -h -O SQUEUE_FORMAT`."""
    jobs = []
    for line in squeue_output.splitlines():
        fields = line.split(None, 3)
        if len(fields) < 3:
            continue
        job, state, partition = fields[:3]
        reason = fields[3].strip() if len(fields) > 3 else ""
        jobs.append(QueuedJob(job, state, partition, reason))
    return jobs
