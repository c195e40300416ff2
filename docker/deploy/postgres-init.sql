-- One database per service on the compose PostgreSQL (run once, on an empty data volume).
CREATE DATABASE platform;
CREATE DATABASE credits;
CREATE DATABASE metering;
CREATE DATABASE faucet;
CREATE DATABASE chain;
CREATE DATABASE kuberay;
