-- 0007_spans_service_source_idx.sql - per service and source, the newest
-- span in a range is one index probe (list_services: which sources saw a
-- service, lib/servicequery); with only (service_name, start_time) a service
-- that one source never saw has all its spans in the range read to learn so.
CREATE INDEX spans_service_source_time_idx
	ON spans (service_name, source, start_time);
