//! The stand-in: a small MongoDB-wire-protocol server that plays mongod, replica-set member or mongos. Not MongoDB.
