#!/bin/sh
printf '#!/bin/sh\necho "Hello, $1!"\n' > /app/greet.sh
