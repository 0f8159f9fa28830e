"""What the tests share besides conftest: catalog generators, fake servers, the browser, endpoint helpers."""
