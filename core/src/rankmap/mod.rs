//! Rank maps: a communicator's ranks to process-group entries, through compressed models.
