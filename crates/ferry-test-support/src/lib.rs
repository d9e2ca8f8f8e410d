//! What ferry's test suites share across crates, as a dev-dependency: real peers for the
//! storage and scale-out suites ([`peers`]), documents built in the test — zips, office
//! files, bombs — for the preview and upload suites ([`documents`]), and where the shared
//! real-world corpus is when it is in reach ([`corpus`]), hosts of a test's own in network
//! namespaces ([`test_host`]), and a folder whose timestamps are to the second ([`coarse_fs`]).

pub mod coarse_fs;
pub mod corpus;
pub mod documents;
pub mod peers;
pub mod test_host;
