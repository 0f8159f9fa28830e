"""How sure each kind of inference evidence is: an edge's confidence is the precision its evidence
showed on the two dev sets, so a retriever can pick edges by the error it accepts.

Measured with ``python -m benchmarks.inference_bench`` (ToolLinkOS's declared edges; the hand
labels on LiveMCPBench's real MCP servers plus the audit of the pairs they leave out). Rounded down
to 0.05 and never above what either dev set showed; a kind seen fewer than 10 times on both keeps a
cautious value. The figures beside each entry are the ones that set it. The REST and typed-join kinds
are fitted by ``python -m benchmarks.rule_calibration`` (every dev catalog's tuning half, checked
leave-one-catalog-out; ``inference_bench.py`` prints its tables).
"""

from __future__ import annotations

CONFIDENCE: dict[str, float] = {
    # output -> parameter, by how the parameter's name meets what a producer offers
    "same name": 1.0,  # country_code <- get_country_code; ToolLinkOS 0.89 (330), LiveMCPBench all judged right
    "identifies": 0.9,  # email_address <- get_email; ToolLinkOS 0.85 (13), LiveMCPBench 15/15 labelled
    "derived": 0.85,  # month <- get_current_date; ToolLinkOS 0.98 (132)
    "form": 0.8,  # markdown_content <- returns Markdown; new, few cases
    "specific": 0.75,  # start_date <- get_date; ToolLinkOS 0.78 (45)
    "head": 0.7,  # version <- list_maven_versions; inside one server only
    "described": 0.85,  # weight of a return read from prose rather than a name or schema
    "record field": 0.8,  # weight of one field of a record returned whole (get_order_details' symbol); new
    # the same-server identifier rule (identifiers.py)
    "identifier named": 0.8,  # paper_id <- search_papers; LiveMCPBench 20/21 labelled
    "identifier of own object": 0.7,  # get_card(id) <- search_cards; LiveMCPBench 7/7 labelled
    "identifier file": 0.65,  # filename <- create_document
    # Fitted by benchmarks/rule_calibration.py on every dev catalog's tuning half (estimated precision of the
    # rules' proposals: labels, the blind audit, the audit's rate for that kind), LOCO-checked there.
    # REST collections (rest.py): only GitHub's API has routes
    "rest lists": 0.85,  # GET /repos/{owner}/{repo}/issues -> {issue_number}; GitHub 0.90 (382)
    "rest creates": 0.7,  # POST /repos/{owner}/{repo}/issues -> {issue_number}; GitHub 0.74 (180)
    # the typed join (typed_join.py): the plain baseline's evidence, one rule among the others
    # invoice_id <- list_invoices: mean of GitHub 0.80 (726), LiveMCPBench 0.86 (58), BFCL 0.66 (23), real MCP
    # servers 0.90 (10), ToolLinkOS 0.33 (18)
    "join name lists": 0.7,
    "join output carries": 0.8,  # invoice_id <- an output with invoices[] or invoice_id: GitHub 0.86 (645), BFCL 0.81
    "join same field": 0.35,  # origin <- an output field 'origin'; under the cut: GitHub 0.25 (3,996), BFCL 0.47 (15)
    # customer_id <- list_clients: labels whose embeddings are close (entities.py); set by hand from word pairs,
    # not yet fitted by rule_calibration.py (the kind came with the same merge)
    "join similar entity": 0.55,
    "join names entity": 0.6,
    "join described entity": 0.6,
    # file formats (files.py)
    "file same server": 0.75,  # pdf_splitter(inputPath) <- docx_to_pdf; LiveMCPBench 12/12 labelled
    "file other server": 0.6,
    # explicit mentions (mentions.py); ToolLinkOS 1.00 (113), LiveMCPBench 12/12 labelled
    "mention by name": 0.95,
    "mention by capability": 0.9,
    "mention in parameter text": 0.9,
    # preconditions and state (catalog_rules.py, identifiers.py)
    "login with session parameter": 0.95,  # ToolLinkOS 1.00 (34)
    "login": 0.9,  # ToolLinkOS 0.96 (23)
    "session opener": 0.8,  # LiveMCPBench 5/5 labelled
    "server login": 0.75,  # rule_calibration.py on the tuning halves: 0.75 (only BFCL multi-turn has logins)
    "read before write": 0.9,  # ToolLinkOS 1.00 (21), LiveMCPBench 2/2 labelled
    "enable if off": 0.85,  # ToolLinkOS 0.86 (7)
    "resource precondition": 0.7,  # ToolLinkOS 0.71 (17)
    "connectivity precondition": 0.7,  # ToolLinkOS 0.72 (464); within one catalog only
}
