drop table if exists decision_fit_audit;
drop table if exists decision_fits;
