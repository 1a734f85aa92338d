//! A process started by another launcher (Open MPI's `mpirun`, MPICH's `mpiexec`, Slurm's
//! `srun`) as one rank of several: the runtime cannot join such a job yet, and running as a
//! singleton would let each rank compute alone and report success. Each launcher's own
//! variables say how many ranks it started; a job of one rank stays a singleton.

/// The variables that name a job's size, by launcher: the first one set with a value above
/// 1 identifies the launcher (Open MPI, then PMI as MPICH's hydra and Intel MPI set it,
/// MVAPICH, then a Slurm job step).
const SIZE_VARIABLES: [(&str, &str); 4] = [
    ("OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"),
    ("PMI_SIZE", "a PMI launcher (MPICH's mpiexec)"),
    ("MV2_COMM_WORLD_SIZE", "MVAPICH's launcher"),
    ("SLURM_STEP_NUM_TASKS", "Slurm's srun"),
];

/// Why this process must not run as a singleton: a launcher the runtime cannot join started
/// it as one of several ranks. `var` reads the environment.
pub(super) fn refusal(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    SIZE_VARIABLES.iter().find_map(|&(name, launcher)| {
        let value = var(name)?;
        let size: usize = value.trim().parse().ok()?;
        (size > 1).then(|| {
            format!(
                "this process was started by {launcher} as one of {size} ranks ({name}={value}) \
                 without PMI-1 (PMI_FD) or PMIx (PMIX_NAMESPACE), through which commcore's \
                 runtime joins a job: start it with `srun --mpi=pmix`, `mpiexec.mpich`, \
                 `mpirun.openmpi` or `commcore run -n {size} -- PROGRAM` (it would otherwise \
                 run alone as a singleton)"
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn a_rank_of_a_foreign_multi_rank_job_is_refused_naming_the_launcher_and_size() {
        let open_mpi =
            refusal(env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")]));
        let message = open_mpi.expect("refused");
        assert!(message.contains("Open MPI's mpirun") && message.contains("one of 4 ranks"));
        assert!(message.contains("commcore run -n 4"));
        let hydra = refusal(env(&[("PMI_SIZE", "3"), ("PMI_RANK", "0")])).expect("refused");
        assert!(hydra.contains("PMI") && hydra.contains("one of 3"));
        let srun = refusal(env(&[("SLURM_STEP_NUM_TASKS", "2")])).expect("refused");
        assert!(srun.contains("srun"));
    }

    #[test]
    fn one_rank_jobs_and_plain_shells_stay_singletons() {
        assert_eq!(refusal(env(&[])), None);
        assert_eq!(refusal(env(&[("OMPI_COMM_WORLD_SIZE", "1")])), None);
        assert_eq!(
            refusal(env(&[("PMI_SIZE", "1"), ("SLURM_NTASKS", "8")])),
            None,
            "a batch script"
        );
        assert_eq!(refusal(env(&[("PMI_SIZE", "many")])), None, "not a size");
    }
}
