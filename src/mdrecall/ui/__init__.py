"""`mdrecall ui`: a local web page to see what an agent remembers (search with explanations, the memory
files, the facts, hook activity and index health). See docs/ui.md."""
