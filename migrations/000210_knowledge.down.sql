DROP TABLE beliefs;
DROP TABLE handoffs;
DROP TABLE wiki_pages;
DROP TABLE forgotten_memories;
DROP TABLE memory_sources;
DROP TABLE memory_facts;
DROP TABLE memories;
DROP TABLE knowledge_sources;
DROP EXTENSION IF EXISTS pg_trgm;
