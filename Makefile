# make install [PREFIX=/usr/local] [DESTDIR=]: the nodenet binary, its
# manual pages and shell completions (bash, zsh, fish).
# BIN=path/to/nodenet installs an already built binary instead of building.
# make test: the tools the tests run (.ci/install-tools.sh, Debian 12, as
# root; idempotent), then the whole suite (.ci/suite: the cli tests, then
# the lab with the unit tests beside it). CI runs exactly this.
# make test-tools: only the tools.
# make docs: the reference in docs/ as a book (mdBook) in target/book;
# mdBook is installed with cargo when missing.

PREFIX ?= /usr/local
DESTDIR ?=
CARGO ?= cargo
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
BIN ?= $(TARGET_DIR)/release/nodenet
# Twice the cores: the tests wait on tools, emulators and VMs more than
# they compute (the cli binary: 115 s with 2 threads, 82 s with 4 on two
# cores). VM tests take a lab slot: one lab at a time (NODENET_LAB_SLOTS).
TEST_THREADS ?= $(shell echo $$(( $$(nproc) * 2 )))

bindir = $(DESTDIR)$(PREFIX)/bin
mandir = $(DESTDIR)$(PREFIX)/share/man/man1
bashdir = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
zshdir = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
fishdir = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d

.PHONY: all build install uninstall test test-tools docs

all: build

build:
	$(CARGO) build --release --locked -p nodenet

test: test-tools
	PATH="$$HOME/.cargo/bin:$$PATH" CARGO="$(CARGO)" TEST_THREADS=$(TEST_THREADS) bash .ci/suite

test-tools:
	bash .ci/install-tools.sh

MDBOOK_VERSION = 0.5.4
docs:
	export PATH="$$HOME/.cargo/bin:$$PATH"; \
	mdbook --version 2>/dev/null | grep -q 'v$(MDBOOK_VERSION)$$' \
	    || $(CARGO) install mdbook --version $(MDBOOK_VERSION) --locked --no-default-features; \
	mdbook build

install: $(if $(filter command line,$(origin BIN)),,build)
	install -d $(bindir) $(mandir) $(bashdir) $(zshdir) $(fishdir)
	install -m 0755 $(BIN) $(bindir)/nodenet
	$(BIN) man -o $(mandir)
	$(BIN) completions bash > $(bashdir)/nodenet
	$(BIN) completions zsh > $(zshdir)/_nodenet
	$(BIN) completions fish > $(fishdir)/nodenet.fish

uninstall:
	rm -f $(bindir)/nodenet $(mandir)/nodenet.1 $(mandir)/nodenet-*.1 \
	    $(bashdir)/nodenet $(zshdir)/_nodenet $(fishdir)/nodenet.fish
