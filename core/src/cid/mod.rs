//! Context-ID allocation: agreeing on a communicator identifier free on every member.
