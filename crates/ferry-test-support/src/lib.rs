//! What ferry's test suites share across crates, as a dev-dependency: real peers for the
//! storage and scale-out suites ([`peers`]), and documents built in the test — zips, office
//! files, bombs — for the preview and upload suites ([`documents`]).

pub mod documents;
pub mod peers;
