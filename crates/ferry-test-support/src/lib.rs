//! What ferry's test suites share across crates, as a dev-dependency: real peers for the
//! storage and scale-out suites ([`peers`]), documents built in the test — zips, office
//! files, bombs — for the preview and upload suites ([`documents`]), and where the shared
//! real-world corpus is when it is in reach ([`corpus`]), and hosts of a test's own in
//! network namespaces ([`test_host`]).

pub mod corpus;
pub mod documents;
pub mod peers;
pub mod test_host;
